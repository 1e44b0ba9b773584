/**
 * Every benchmark in one sitting (docs/benchmarks.md, "All benchmarks in one
 * sitting"): runs each benchmark of a checkout in turn, with reduced but still
 * meaningful sizes, and prints one summary table at the end (benchmark, key
 * figure, floor, ratio, target, met).
 *
 *   npm run bench:all -- [--tree DIR] [--only transfer,tasks] [--skip launch] [--full] [--dry-run]
 *
 * - `--tree DIR`: the checkout whose benchmarks run (default: this one), e.g.
 *   an older commit in another worktree (`git worktree add --detach DIR
 *   <commit>`, with node_modules linked or installed there). Each benchmark
 *   runs as `npx --no tsx DIR/bench/<file>.ts <options>` with cwd DIR, so it
 *   builds and starts DIR's own servers and reads DIR's config/.
 * - `--full`: each benchmark with its own default sizes (about an hour)
 *   instead of the reduced ones below.
 * - `--only` / `--skip`: comma lists of the names below.
 *
 * Each child's stdout is shown and kept: the figures come from the last JSON
 * line it prints (`{"bench": ...}`; every benchmark has printed one since
 * long before the result files), and, for the helper benchmarks of older
 * checkouts that print none, from their text lines. They are judged here
 * against today's targets, so an older checkout is measured by the same
 * rules. A benchmark that fails (or does not exist in the tree) gets a row
 * saying so; the others still run. The summary is also written as
 * bench/results/all-<time>-<tree's short commit>.json of this checkout (the
 * benchmarks of a checkout that has writeResult write their own files into
 * its bench/results/).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ROOT, fmt, printTable, writeResult } from './lib.js';

const { values: args } = parseArgs({
  options: {
    tree: { type: 'string' },
    only: { type: 'string' },
    skip: { type: 'string' },
    full: { type: 'boolean', default: false },
    'dry-run': { type: 'boolean', default: false },
  },
  strict: true,
});

const tree = path.resolve(args.tree ?? ROOT);
if (!existsSync(path.join(tree, 'bench'))) throw new Error(`--tree: ${tree} has no bench/ directory`);
if (!existsSync(path.join(tree, 'node_modules', '.bin', 'tsx'))) {
  throw new Error(`--tree: ${tree} has no node_modules/.bin/tsx (link this checkout's: ln -s ${path.join(ROOT, 'node_modules')} ${path.join(tree, 'node_modules')})`);
}

/** One line of the summary. `value` and `met` only for a judged target. */
interface Row {
  bench: string;
  what: string;
  figure: string;
  floor: string;
  ratio: string;
  target: string;
  met?: boolean;
  value?: number;
}

// The figures are another checkout's JSON: read them loosely.
/* eslint-disable @typescript-eslint/no-explicit-any */
type Figures = any;

const n0 = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? fmt(x, 0) : '?');
const n2 = (x: unknown) => (typeof x === 'number' && Number.isFinite(x) ? fmt(x, 2) : '?');
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
/** A judged row: `ratio` against `bound` (>= unless `below`). */
const judged = (bench: string, what: string, figure: string, floor: string, value: number, bound: number, below = false, unit = ''): Row => ({
  bench, what, figure, floor,
  ratio: below ? '–' : n2(value),
  target: below ? `< ${bound}${unit}` : `>= ${bound}`,
  ...(Number.isFinite(value) ? { value, met: below ? value < bound : value >= bound } : {}),
});
const context = (bench: string, what: string, figure: string, floor: string, ratio: number): Row => ({ bench, what, figure, floor, ratio: n2(ratio), target: 'context' });

interface Step {
  name: string;
  file: string;
  /** The reduced sizes (none with --full). */
  reduced: string[];
  /** Always passed. */
  fixed?: string[];
  /** A helper benchmark whose older versions print text lines only (rows() reads them). */
  textOnly?: boolean;
  rows(f: Figures | undefined, text: string): Row[];
}

const STEPS: Step[] = [
  {
    name: 'transfer', file: 'transfer.ts', reduced: ['--size', '256', '--runs', '2'],
    rows: (f) => (f.servers as Figures[]).flatMap((s) => [
      judged('transfer', `upload (${s.mode})`, `${n0(s.upload.MiBps)} MiB/s`, `${n0(f.copyStream.MiBps)} MiB/s stream copy`, s.upload.ratioToStreamCopy, 0.5),
      judged('transfer', `download (${s.mode})`, `${n0(s.download.MiBps)} MiB/s`, `${n0(f.copyStream.MiBps)} MiB/s stream copy`, s.download.ratioToStreamCopy, 0.5),
      judged('transfer', `server peak RSS (${s.mode})`, `${fmt(s.serverRssPeakMiB)} MiB`, '–', s.serverRssPeakMiB, 200, true, ' MiB'),
    ]),
  },
  {
    name: 'children', file: 'children.ts', reduced: ['--duration', '8', '--warmup', '2', '--log-levels', 'warn'],
    rows: (f) => (f.runs as Figures[]).filter((r) => r.target === 'project' && !String(r.label).includes('cpu-prof')).map((r) => {
      const what = String(r.label).replace(/^project /, '');
      const floor = `${n0(f.bareReqPerSec)} req/s bare koa`;
      // judged on the shipped configuration (listing cache on); uncached runs are context
      return what.includes('cache=off')
        ? context('children', what, `${n0(r.reqPerSec)} req/s`, floor, r.reqPerSec / f.bareReqPerSec)
        : judged('children', what, `${n0(r.reqPerSec)} req/s`, floor, r.reqPerSec / f.bareReqPerSec, 0.3);
    }),
  },
  {
    name: 'launch', file: 'launch-latency.ts', reduced: ['--latency', '100', '--launches', '600', '--runs', '2'],
    rows: (f) => {
      const names = Object.keys(f.results);
      const before = names.find((x) => x.startsWith('before'));
      const after = names.find((x) => x.startsWith('after')) ?? names.at(-1)!;
      const med = (name: string, key: string) => median((f.results[name] as Figures[]).map((r) => r[key] as number));
      const rows: Row[] = [];
      if (before) {
        rows.push(judged('launch', 'launches/s after / before', `${n0(med(after, 'launchesPerSec'))} launches/s`,
          `${n0(med(before, 'launchesPerSec'))} launches/s ${before}`, f.ratio ?? med(after, 'launchesPerSec') / med(before, 'launchesPerSec'), 0.9));
      }
      const p50 = med(after, 'idleP50');
      rows.push(judged('launch', 'idle launch-to-running p50', `${fmt(p50)} ms`, '–', p50, 100, true, ' ms'));
      return rows;
    },
  },
  {
    name: 'tasks', file: 'tasks.ts', reduced: ['--tasks', '1000', '--items', '1000', '--per-job', '1,100'],
    rows: (f) => {
      const svc = f.service.perSecond as number;
      const rows: Row[] = [];
      if (f.durable) rows.push(judged('tasks', 'start -> completed vs durable floor', `${n0(svc)} tasks/s`, `${n0(f.durable.perSecond)} tasks/s durable`, svc / f.durable.perSecond, 0.9));
      else rows.push({ bench: 'tasks', what: 'start -> completed vs durable floor', figure: `${n0(svc)} tasks/s`, floor: 'not measured by this tree', ratio: '–', target: '>= 0.9' });
      if (f.http) rows.push(context('tasks', 'vs HTTP floor (no database)', `${n0(svc)} tasks/s`, `${n0(f.http.perSecond)} tasks/s HTTP`, svc / f.http.perSecond));
      rows.push(context('tasks', 'vs bare BullMQ', `${n0(svc)} tasks/s`, `${n0(f.bare.perSecond)} jobs/s bare`, svc / f.bare.perSecond));
      return rows;
    },
  },
  {
    name: 'sync-contention', file: 'sync-contention.ts', reduced: ['--duration', '5'],
    rows: (f) => [
      { bench: 'sync-contention', what: 'listing p50 during / alone', figure: `${n2(f.during.p50)} ms`, floor: `${n2(f.alone.p50)} ms alone`, ratio: n2(f.ratio.p50), target: 'flat (no number)' },
      { bench: 'sync-contention', what: 'listing p99 during / alone', figure: `${n2(f.during.p99)} ms`, floor: `${n2(f.alone.p99)} ms alone`, ratio: n2(f.ratio.p99), target: 'flat (no number)' },
      {
        bench: 'sync-contention', what: 'scope=all listings failed', figure: `${f.heavy.failed} of ${f.heavy.completed + f.heavy.failed}`, floor: '–', ratio: '–',
        target: '= 0', value: f.heavy.failed, met: f.heavy.failed === 0,
      },
    ],
  },
  {
    name: 'print-dispatch', file: 'print-dispatch.ts', reduced: ['--jobs', '4000'],
    rows: (f) => {
      const rows: Row[] = [];
      for (const [phase, label] of [['e2e', 'end to end'], ['drain', 'drain']] as const) {
        const e = f.engine[phase].perSecond as number;
        if (f.durable) rows.push(judged('print-dispatch', `${label} vs durable floor`, `${n0(e)} jobs/s`, `${n0(f.durable[phase].perSecond)} jobs/s durable`, e / f.durable[phase].perSecond, 0.9));
        else rows.push({ bench: 'print-dispatch', what: `${label} vs durable floor`, figure: `${n0(e)} jobs/s`, floor: 'not measured by this tree', ratio: '–', target: '>= 0.9' });
        if (f.bare) rows.push(context('print-dispatch', `${label} vs bare BullMQ`, `${n0(e)} jobs/s`, `${n0(f.bare[phase].perSecond)} jobs/s bare`, e / f.bare[phase].perSecond));
      }
      return rows;
    },
  },
  {
    // the project against CUPS (issue 22); CUPS is installed by the benchmark itself when missing (root)
    name: 'print-cups', file: 'print-cups.ts', reduced: ['--jobs', '1000', '--ipp-jobs', '100'],
    rows: (f) => {
      const rows: Row[] = [];
      for (const [i, p] of (f.project as Figures[]).entries()) {
        const k = (f.cups as Figures[] | undefined)?.[i];
        if (k && p.clients === 4) rows.push(judged('print-cups', `${p.clients} submitters vs CUPS`, `${n0(p.perSecond)} jobs/s`, `${n0(k.perSecond)} jobs/s CUPS`, p.perSecond / k.perSecond, 10));
        else if (k) rows.push(context('print-cups', `${p.clients} submitters vs CUPS`, `${n0(p.perSecond)} jobs/s`, `${n0(k.perSecond)} jobs/s CUPS`, p.perSecond / k.perSecond));
      }
      const four = (f.project as Figures[]).find((p) => p.clients === 4);
      const sixteen = (f.project as Figures[]).find((p) => p.clients === 16);
      if (four && sixteen) rows.push(judged('print-cups', '16 clients / 4 clients', `${n0(sixteen.perSecond)} jobs/s`, `${n0(four.perSecond)} jobs/s at 4`, sixteen.perSecond / four.perSecond, 1.5));
      if (f.ipp) rows.push({ bench: 'print-cups', what: `ippeveprinter x ${f.ipp.printers}`, figure: `${n0(f.ipp.jobs / f.ipp.toProcessedSeconds)} jobs/s`, floor: '–', ratio: '–', target: 'context' });
      return rows;
    },
  },
  {
    name: 'print-listing', file: 'print-listing.ts', reduced: ['--duration', '8', '--warmup', '2'],
    rows: (f) => {
      const project = (f.runs as Figures[]).find((r) => String(r.label).startsWith('project'));
      return [judged('print-listing', 'filtered listing, uncached', `${n0(project.reqPerSec)} req/s`, `${n0(f.bareReqPerSec)} req/s bare koa`, project.reqPerSec / f.bareReqPerSec, 0.3)];
    },
  },
  {
    name: 'csv', file: 'csv-import.ts', reduced: ['--rows', '300000'],
    rows: (f) => [
      judged('csv', `${f.rows} rows as one ${f.target === 'lists' ? 'list' : 'task'}`, `${n0(f.service.rowsPerSecond)} rows/s`, `${n0(f.floor.rowsPerSecond)} rows/s csv-parse`, f.service.rowsPerSecond / f.floor.rowsPerSecond, 0.5),
      judged('csv', 'server peak RSS', `${fmt(f.service.rssPeakMiB)} MiB`, '–', f.service.rssPeakMiB, 300, true, ' MiB'),
      ...(f.durable ? [context('csv', 'vs durable floor (COPY, primary key only)', `${n0(f.service.rowsPerSecond)} rows/s`, `${n0(f.durable.rowsPerSecond)} rows/s durable`, f.service.rowsPerSecond / f.durable.rowsPerSecond)] : []),
    ],
  },
  {
    name: 'hotfolder', file: 'hotfolder.ts', reduced: ['--files', '2000'],
    // absolute targets (issue 21): files per second and the drop-to-stored p99; cp of the same files as context
    rows: (f) => [
      judged('hotfolder', `${f.files} files of ${f.kib} KiB${f.task === 'print' ? ' + print task' : f.task && f.task !== 'off' ? ' + started task' : ''}: files/s`, `${n0(f.service.filesPerSecond)} files/s`, `${n0(f.floor.filesPerSecond)} files/s cp`, f.service.filesPerSecond, 500),
      judged('hotfolder', 'drop-to-stored p99', `${fmt(f.service.p99, 2)} s`, '–', f.service.p99, 3, true, ' s'),
    ],
  },
  // the helper benchmarks: no floor, no target; older ones print text only
  {
    name: 'print-dispatch-sql', file: 'print-dispatch-sql.ts', textOnly: true, reduced: ['--jobs', '4000', '--rounds', '2'], fixed: ['--batch', '20'],
    rows: (f, text) => {
      const rounds: { pgCpuMsPerJob: number; clientCpuMsPerJob: number }[] = f?.rounds
        ?? [...text.matchAll(/^round \d+: \d+ jobs, [\d.]+ ms\/job wall, PG CPU ([\d.]+) ms\/job, client CPU ([\d.]+) ms\/job/gm)]
          .map((m) => ({ pgCpuMsPerJob: Number(m[1]), clientCpuMsPerJob: Number(m[2]) }));
      if (rounds.length === 0) throw new Error('no round lines');
      return [{
        bench: 'print-dispatch-sql', what: 'outcome statements, 20 printers a statement, per round',
        figure: `PG ${rounds.map((r) => fmt(r.pgCpuMsPerJob, 3)).join(' / ')} + client ${rounds.map((r) => fmt(r.clientCpuMsPerJob, 3)).join(' / ')} ms CPU/job`,
        floor: '–', ratio: '–', target: '–',
      }];
    },
  },
  {
    name: 'print-listing-sql', file: 'print-listing-sql.ts', textOnly: true, reduced: ['--runs', '200'],
    rows: (f, text) => {
      const shipped: { postgresMs: number; nodeMs: number } | undefined = (f?.variants as Figures[] | undefined)?.find((v) => String(v.label).startsWith('shipped'))
        ?? [...text.matchAll(/^shipped.*?postgres ([\d.]+) ms\s+node ([\d.]+) ms/gm)].map((m) => ({ postgresMs: Number(m[1]), nodeMs: Number(m[2]) }))[0];
      if (!shipped) throw new Error('no "shipped" line');
      return [{ bench: 'print-listing-sql', what: 'shipped listing statement, one connection', figure: `PG ${fmt(shipped.postgresMs, 3)} + node ${fmt(shipped.nodeMs, 3)} ms CPU/page`, floor: '–', ratio: '–', target: '–' }];
    },
  },
  {
    name: 'list-items-costs', file: 'list-items-costs.ts', textOnly: true, reduced: ['--rows', '200000'], fixed: ['as-is', 'no-doc-index'],
    rows: (f, text) => {
      const variants: { variant: string; cpuMsPer1kRows: number }[] = f?.variants
        ?? [...text.matchAll(/^(\S+)\s+CPU [\d.]+ s \(([\d.]+) ms \/ 1,000 rows\)/gm)].map((m) => ({ variant: m[1]!, cpuMsPer1kRows: Number(m[2]) }));
      if (variants.length === 0) throw new Error('no variant lines');
      return [{
        bench: 'list-items-costs', what: 'list_items load, PostgreSQL CPU', figure: variants.map((v) => `${v.variant} ${fmt(v.cpuMsPer1kRows, 2)}`).join(', ') + ' ms/1,000 rows',
        floor: '–', ratio: '–', target: '–',
      }];
    },
  },
];

const pick = (raw: string | undefined) => raw?.split(',').map((x) => x.trim()).filter(Boolean);
const only = pick(args.only);
const skip = pick(args.skip) ?? [];
for (const name of [...(only ?? []), ...skip]) if (!STEPS.some((s) => s.name === name)) throw new Error(`unknown benchmark "${name}"; one of ${STEPS.map((s) => s.name).join(', ')}`);
const steps = STEPS.filter((s) => (!only || only.includes(s.name)) && !skip.includes(s.name));
const argvOf = (s: Step) => [...(args.full ? [] : s.reduced), ...(s.fixed ?? [])];

if (args['dry-run']) {
  for (const s of steps) console.log(`(cd ${tree} && npx --no tsx ${path.join(tree, 'bench', s.file)} ${argvOf(s).join(' ')})`);
  process.exit(0);
}

/** Runs one benchmark; its stdout is shown and kept, its stderr shown. */
function run(s: Step): Promise<{ code: number | null; signal: string | null; stdout: string; seconds: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    // a process group of its own, so a signal reaches the benchmark behind npx and tsx (npx does not pass SIGTERM on)
    const child = spawn('npx', ['--no', 'tsx', path.join(tree, 'bench', s.file), ...argvOf(s)], { cwd: tree, stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    current = child;
    const chunks: Buffer[] = [];
    child.stdout.on('data', (c: Buffer) => {
      process.stdout.write(c);
      chunks.push(c);
    });
    child.once('error', reject);
    child.once('close', (code, signal) => {
      current = undefined;
      resolve({ code, signal, stdout: Buffer.concat(chunks).toString('utf8'), seconds: (performance.now() - t0) / 1000 });
    });
  });
}

/** The last stdout line that is a JSON object with a `bench` name: the figures every benchmark prints. */
function figuresOf(stdout: string): Figures | undefined {
  const lines = stdout.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!.trim();
    if (!line.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(line) as Figures;
      if (parsed && typeof parsed === 'object' && typeof parsed.bench === 'string') return parsed;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

let current: ReturnType<typeof spawn> | undefined;
let stopping = false;
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  // passed on to the running benchmark's process group (it cleans up after itself); no further benchmark starts
  process.on(sig, () => {
    stopping = true;
    if (current?.pid !== undefined) {
      try {
        process.kill(-current.pid, sig);
      } catch {
        // already gone
      }
    }
  });
}

const started = new Date();
const t0 = performance.now();
const rows: Row[] = [];
const ran: { bench: string; command: string[]; exit: number | string | null; seconds: number; resultFile?: string; error?: string }[] = [];
console.error(`bench:all: ${steps.length} benchmark(s) of ${tree}${args.full ? ' (full sizes)' : ' (reduced sizes)'}, started ${started.toISOString()}`);
for (const s of steps) {
  if (stopping) break;
  const command = ['npx', '--no', 'tsx', path.join(tree, 'bench', s.file), ...argvOf(s)];
  if (!existsSync(path.join(tree, 'bench', s.file))) {
    rows.push({ bench: s.name, what: 'not in this tree', figure: '–', floor: '–', ratio: '–', target: '–' });
    ran.push({ bench: s.name, command, exit: 'missing', seconds: 0 });
    continue;
  }
  console.error(`\n=== ${s.name}: ${command.slice(3).join(' ')} (cwd ${tree})`);
  const r = await run(s);
  const figures = figuresOf(r.stdout);
  const resultFile = /^result file: (.+)$/m.exec(r.stdout)?.[1];
  const entry: (typeof ran)[number] = {
    bench: s.name, command, exit: r.code ?? r.signal, seconds: r.seconds, ...(resultFile ? { resultFile: path.resolve(tree, resultFile) } : {}),
  };
  try {
    if (r.code !== 0) throw new Error(`exited with ${r.code ?? r.signal}`);
    if (!figures && !s.textOnly) throw new Error('no JSON line on stdout');
    rows.push(...s.rows(figures, r.stdout));
  } catch (err) {
    entry.error = (err as Error).message;
    rows.push({ bench: s.name, what: `no result: ${entry.error}`.slice(0, 80), figure: '–', floor: '–', ratio: '–', target: '–' });
  }
  ran.push(entry);
  console.error(`=== ${s.name}: ${fmt(r.seconds, 0)} s, exit ${r.code ?? r.signal}`);
}
const totalSeconds = (performance.now() - t0) / 1000;

console.log(`\nbench:all of ${tree}, ${started.toISOString()}, ${fmt(totalSeconds / 60, 1)} min${stopping ? ' (interrupted)' : ''}${args.full ? ', full sizes' : ', reduced sizes'}`);
printTable(['benchmark', 'what', 'figure', 'floor', 'ratio', 'target', 'met'],
  rows.map((r) => [r.bench, r.what, r.figure, r.floor, r.ratio, r.target, r.met === undefined ? '–' : r.met ? 'yes' : 'NO']), 4);
console.log('');
printTable(['benchmark', 'seconds', 'exit', 'result file'], ran.map((x) => [x.bench, fmt(x.seconds, 0), String(x.exit), x.resultFile ? path.relative(process.cwd(), x.resultFile) : '–']));
console.log(`total: ${fmt(totalSeconds, 0)} s`);
writeResult('all', args, {
  figures: { bench: 'all', tree, full: args.full, totalSeconds, interrupted: stopping, steps: ran, rows },
  floors: {},
  ratios: {},
  targets: rows.filter((r) => r.met !== undefined).map((r) => ({ name: `${r.bench}: ${r.what}`, value: r.value!, target: r.target, met: r.met! })),
}, { root: tree });
process.exit(stopping ? 130 : ran.some((x) => x.exit !== 0 && x.exit !== 'missing') ? 1 : 0);
