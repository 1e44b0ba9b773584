import { readFile } from 'node:fs/promises';

/** A process's resident set now (`VmRSS`) and its peak so far (`VmHWM`), in bytes, from `/proc/<pid>/status`. */
export async function rssOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/**
 * The highest RSS of `pid` while `work` runs, sampled every `everyMs` (the
 * peak counter `VmHWM` cannot be reset, so a sampled peak is what separates
 * one request from what came before it).
 */
export async function peakRssDuring<T>(pid: number, work: () => Promise<T>, everyMs = 20): Promise<{ before: number; peak: number; result: T }> {
  const before = (await rssOf(pid)).rss;
  let peak = before;
  const timer = setInterval(() => {
    void rssOf(pid).then((m) => (peak = Math.max(peak, m.rss)), () => undefined);
  }, everyMs);
  try {
    const result = await work();
    peak = Math.max(peak, (await rssOf(pid)).rss);
    return { before, peak, result };
  } finally {
    clearInterval(timer);
  }
}
