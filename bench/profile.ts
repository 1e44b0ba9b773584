/**
 * Summarises a V8 `.cpuprofile` (from `node --cpu-prof`): self time by
 * function and by module (package under node_modules, file under src/, or
 * node internals), largest first.
 *
 *   npx tsx bench/profile.ts <file.cpuprofile> [--top 20]
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
  /** Share of samples in which the main thread was idle (waiting for I/O). */
  idleShare: number;
  functions: { name: string; where: string; selfMs: number; share: number }[];
  modules: { module: string; selfMs: number; share: number }[];
}

/** Groups a script URL: `pino`, `@koa/router`, `src/api/repo/present.ts`, `node:internal`, ... */
export function moduleOf(url: string): string {
  if (!url) return '(native/v8)';
  if (url.startsWith('node:')) return url.startsWith('node:internal') ? 'node:internal' : url;
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (m) return m[1]!;
  const s = /\/(src\/.*|bench\/.*)$/.exec(url);
  return s ? s[1]! : url;
}

export function summarizeProfile(file: string, top = 20): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    // the time delta before sample i+1 is the duration of sample i
    const d = deltas[i + 1] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, d));
  }
  let total = 0;
  let idle = 0;
  const fns = new Map<string, { name: string; where: string; us: number }>();
  const mods = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    total += us;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') {
      idle += us;
      continue;
    }
    const name = functionName || '(anonymous)';
    const where = url ? `${moduleOf(url)}:${lineNumber + 1}` : '';
    const key = `${name}@${where}`;
    const f = fns.get(key) ?? { name, where, us: 0 };
    f.us += us;
    fns.set(key, f);
    const mod = ['(garbage collector)', '(program)'].includes(functionName) ? functionName : moduleOf(url);
    mods.set(mod, (mods.get(mod) ?? 0) + us);
  }
  const busy = total - idle || 1;
  return {
    totalMs: total / 1000,
    idleShare: total ? idle / total : 0,
    functions: [...fns.values()].sort((a, b) => b.us - a.us).slice(0, top)
      .map((f) => ({ name: f.name, where: f.where, selfMs: f.us / 1000, share: f.us / busy })),
    modules: [...mods.entries()].sort((a, b) => b[1] - a[1]).slice(0, top)
      .map(([module, us]) => ({ module, selfMs: us / 1000, share: us / busy })),
  };
}

export function printSummary(s: ProfileSummary): void {
  console.log(`profile: ${(s.totalMs / 1000).toFixed(1)} s sampled, main thread idle ${(s.idleShare * 100).toFixed(1)}%; shares below are of busy time`);
  console.log('\nself time by module:');
  for (const m of s.modules) console.log(`  ${(m.share * 100).toFixed(1).padStart(5)}%  ${m.selfMs.toFixed(0).padStart(7)} ms  ${m.module}`);
  console.log('\nself time by function:');
  for (const f of s.functions) console.log(`  ${(f.share * 100).toFixed(1).padStart(5)}%  ${f.selfMs.toFixed(0).padStart(7)} ms  ${f.name}  ${f.where}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({ options: { top: { type: 'string', default: '20' } }, allowPositionals: true });
  if (positionals.length !== 1) {
    console.error('usage: npx tsx bench/profile.ts <file.cpuprofile> [--top 20]');
    process.exit(2);
  }
  printSummary(summarizeProfile(positionals[0]!, Number(values.top)));
}
