/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time by
 * function and by module (package under node_modules, file under src/, or
 * node internals), largest first.
 *
 *   npx tsx bench/profile.ts <file.cpuprofile> [--top 20]
 *
 * Self time says where the CPU was; inclusive time says which call paths it
 * was spent under (a function and its callees, each counted once per stack).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  totalMs: number;
  /** The window summarised, in the profile's clock (µs, CLOCK_MONOTONIC), when one was given. */
  window?: { fromUs: number; toUs: number; matched: boolean };
  /** Share of samples in which the main thread was idle (waiting for I/O). */
  idleShare: number;
  /** Self time: where the CPU actually was. */
  functions: { name: string; where: string; selfMs: number; share: number }[];
  modules: { module: string; selfMs: number; share: number }[];
  /** Inclusive time: the function and everything it called (each counted once per stack). */
  inclusive: { name: string; where: string; totalMs: number; share: number }[];
}

/** Groups a script URL: `pino`, `@koa/router`, `src/areas/repository/present.ts`, `node:internal`, ... */
export function moduleOf(url: string): string {
  if (!url) return '(native/v8)';
  if (url.startsWith('node:')) return url.startsWith('node:internal') ? 'node:internal' : url;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const s = /\/(src\/.*|bench\/.*)$/.exec(url);
  return s ? s[1]! : url;
}

/**
 * `window` (µs on CLOCK_MONOTONIC, e.g. process.hrtime.bigint() / 1000n of any
 * process on the machine, which is V8's profile clock on Linux) keeps only the
 * samples taken inside it, e.g. the measured load without start-up; when it
 * does not overlap the profile the whole profile is used.
 */
export function summarizeProfile(file: string, top = 20, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const stamps: number[] = [];
  let t = profile.startTime;
  for (let i = 0; i < samples.length; i++) {
    t += deltas[i] ?? 0;
    stamps.push(t);
  }
  const matched = window !== undefined && stamps.some((ts) => ts >= window.fromUs && ts <= window.toUs);
  const selfUs = new Map<number, number>();
  for (let i = 0; i < samples.length; i++) {
    if (matched && (stamps[i]! < window!.fromUs || stamps[i]! > window!.toUs)) continue;
    // the time delta before sample i+1 is the duration of sample i
    const d = Math.max(0, deltas[i + 1] ?? 0);
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + d);
  }
  let total = 0;
  let idle = 0;
  const keyOf = (node: ProfileNode) => {
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const where = url ? `${moduleOf(url)}:${lineNumber + 1}` : '';
    return { key: `${name}@${where}`, name, where };
  };
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const incl = new Map<string, { name: string; where: string; us: number }>();
  const mods = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const { functionName, url } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const k = keyOf(node);
    const f = fns.get(k.key) ?? { name: k.name, where: k.where, us: 0 };
    f.us += us;
    fns.set(k.key, f);
    const mod = ['(garbage collector)', '(program)'].includes(functionName) ? functionName : moduleOf(url);
    mods.set(mod, (mods.get(mod) ?? 0) + us);
    // inclusive: every distinct function on the stack (bounded by the node count)
    const seen = new Set<string>();
    let cur: number | undefined = id;
    for (let depth = 0; cur !== undefined && depth < profile.nodes.length; depth++) {
      const n = byId.get(cur);
      if (!n) break;
      const kk = keyOf(n);
      if (!seen.has(kk.key) && !['(root)'].includes(n.callFrame.functionName)) {
        seen.add(kk.key);
        const e = incl.get(kk.key) ?? { name: kk.name, where: kk.where, us: 0 };
        e.us += us;
        incl.set(kk.key, e);
      }
      cur = parentOf.get(cur);
    }
  }
  const busy = total - idle || 1;
  return {
    totalMs: total / 1000,
    ...(window ? { window: { ...window, matched } } : {}),
    idleShare: total ? idle / total : 0,
    functions: [...fns.values()].sort((a, b) => b.us - a.us).slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, selfMs: f.us / 1000, share: f.us / busy })),
    modules: [...mods.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([module, us]) => ({ module, selfMs: us / 1000, share: us / busy })),
    inclusive: [...incl.values()].sort((a, b) => b.us - a.us).slice(0, top * 2)
      .map((f) => ({ name: f.name, where: f.where, totalMs: f.us / 1000, share: f.us / busy })),
  };
}

export function printSummary(s: ProfileSummary): void {
  const win = s.window ? (s.window.matched ? ', measurement window only' : ', whole profile (window did not match)') : '';
  console.log(`profile: ${(s.totalMs / 1000).toFixed(1)} s sampled${win}, main thread idle ${(s.idleShare * 100).toFixed(1)}%; shares below are of busy time`);
  console.log('\nself time by module:');
  for (const m of s.modules) console.log(`  ${(m.share * 100).toFixed(1).padStart(5)}%  ${m.selfMs.toFixed(0).padStart(7)} ms  ${m.module}`);
  console.log('\nself time by function:');
  for (const f of s.functions) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.name}  ${f.where}`);
  console.log('\ninclusive time (function and its callees):');
  for (const f of s.inclusive) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.totalMs.toFixed(0).padStart(7)} ms  ${f.name}  ${f.where}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '20' } }, allowPositionals: true });
  if (positionals.length !== 1) {
    console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [--top 20]');
    process.exit(2);
  }
  printSummary(summarizeProfile(positionals[0]!, Number(values.top)));
}
