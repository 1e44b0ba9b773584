/**
 * Command launch benchmark (docs/benchmarks.md): launch-to-running latency
 * (p50, p99) and launches per second, for this checkout and for an earlier
 * commit (default 64aaa41, before the transactional outbox), in the same run.
 *
 *   npm run bench:launch -- [--latency 200] [--launches 1000] [--connections 16]
 *     [--runs 2] [--before 64aaa41|none] [--server compiled|tsx] [--profile]
 *
 * Each variant runs as a child server (bench/server.ts: API and workers in one
 * process, PostgreSQL and the local Redis). The command is `delete` of a fresh
 * document: its run is one row lookup and one DELETE, so what is measured is the
 * path from the launch to a worker picking the command up (transaction, queue,
 * worker), not the command's own work, and its slot frees at once for the next.
 *
 * "Running" is observed in the database: the benchmark adds a trigger to the
 * server's schema that stamps `clock_timestamp()` when a command moves from
 * `queued` to `running` and notifies the benchmark. Latency = that stamp minus
 * the moment this process received the launch's answer (the same machine
 * clock). Two phases per variant:
 *
 * - **latency**: `--latency` launches one at a time, each after the previous
 *   one was running (an idle server: the floor of the path);
 * - **throughput**: `--launches` launches over `--connections` concurrent
 *   keep-alive clients; launches/s = launches / wall time of their answers,
 *   with launch-to-running under that load too.
 *
 * Variants alternate per run (before, after, before, ...) so machine load hits
 * both alike; medians over the runs are reported, then one JSON line, and the
 * result file is written (bench/results/, lib.ts writeResult). Targets:
 * launches/s after >= 0.90 x before (medians); idle launch-to-running p50 < 100 ms.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { printSummary, summarizeProfile, type ProfileSummary } from './profile.js';
import { ROOT, compileServers, jsonCall, fmt, machineCpu, busyCores, parseModes, printTable, procCpuSeconds, procSyscalls, spawnServer, writeResult, type ChildServer, type TargetResult } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';

const { values: args } = parseArgs({
  options: {
    latency: { type: 'string', default: '200' },
    launches: { type: 'string', default: '1000' },
    connections: { type: 'string', default: '16' },
    runs: { type: 'string', default: '2' },
    before: { type: 'string', default: '64aaa41' },
    server: { type: 'string', default: 'compiled' },
    profile: { type: 'boolean', default: false },
  },
  strict: true,
});
const latencyN = Number(args.latency);
const launches = Number(args.launches);
const connections = Number(args.connections);
const runs = Number(args.runs);
const [mode] = parseModes(args.server);
if (!Number.isInteger(latencyN) || latencyN < 10 || latencyN > 100_000) throw new Error('--latency: 10 to 100000');
if (!Number.isInteger(launches) || launches < 10 || launches > 1_000_000) throw new Error('--launches: 10 to 1000000');
if (!Number.isInteger(connections) || connections < 1 || connections > 256) throw new Error('--connections: 1 to 256');
if (!Number.isInteger(runs) || runs < 1 || runs > 20) throw new Error('--runs: 1 to 20');
if (!/^(none|[0-9a-f]{4,40})$/.test(args.before)) throw new Error('--before: a commit id or none');

const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const call = (method: string, url: string, token: string, body?: unknown) => jsonCall(agent, method, url, token, body);


/** Stamps queued -> running in the server's schema and notifies `channel` with the cid. */
async function instrument(db: pg.Client, schema: string, channel: string): Promise<void> {
  const s = `"${schema}"`;
  await db.query(`CREATE TABLE ${s}.bench_running (cid uuid PRIMARY KEY, at timestamptz NOT NULL)`);
  await db.query(`CREATE FUNCTION ${s}.bench_mark() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO ${s}.bench_running (cid, at) VALUES (NEW.cid, clock_timestamp()) ON CONFLICT DO NOTHING;
      PERFORM pg_notify('${channel}', NEW.cid::text);
      RETURN NULL;
    END $$`);
  await db.query(`CREATE TRIGGER bench_running AFTER UPDATE OF state ON ${s}.commands
    FOR EACH ROW WHEN (OLD.state = 'queued' AND NEW.state = 'running') EXECUTE FUNCTION ${s}.bench_mark()`);
}

/**
 * CPU of the server's PostgreSQL backends over a span. The server's pool opens
 * connections as the load grows and closes idle ones, so the backends are
 * looked up every 100 ms, not once: a backend that appears counts from zero
 * (it started inside the span), one that exits keeps what was last read.
 */
function backendCpu(db: pg.Client, appName: string): { stop(): Promise<number> } {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  let initial = true;
  const sample = async () => {
    const { rows } = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [appName]);
    for (const { pid } of rows) {
      const cpu = procCpuSeconds(pid);
      if (cpu === undefined) continue;
      if (!first.has(pid)) first.set(pid, initial ? cpu : 0);
      last.set(pid, cpu);
    }
    initial = false;
  };
  let busy = sample();
  const timer = setInterval(() => {
    busy = busy.then(sample, sample);
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await busy.catch(() => undefined);
      await sample();
      if (first.size === 0) return NaN;
      let total = 0;
      for (const [pid, cpu] of last) total += cpu - first.get(pid)!;
      return total;
    },
  };
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

interface Figures {
  idleP50: number;
  idleP99: number;
  launchesPerSec: number;
  loadedP50: number;
  loadedP99: number;
  launchAnswerP50: number;
  /** Launches per second until the last of them was running (not only answered). */
  runningPerSec: number;
  /** Server process CPU (API and workers) per launch over the throughput phase, until every launch ran: less noisy than launches/s on a shared machine. */
  serverCpuMsPerLaunch: number;
  /** The server's PostgreSQL backends' CPU per launch (found by application_name; NaN when the variant's bench server does not set it). */
  pgCpuMsPerLaunch: number;
  /** The server's read and write system calls per launch over the same span (socket round trips to PostgreSQL and Redis, HTTP): a count, steady under load. */
  serverSyscallsPerLaunch: number;
  /** The throughput phase on CLOCK_MONOTONIC (µs), for --profile to summarise only it. */
  window: { fromUs: number; toUs: number };
}


async function measure(server: ChildServer): Promise<Figures> {
  const { url, token, schema } = server.info as { url: string; token: string; schema: string };
  const repo = `${url}/v1/services/store/repo`;
  const channel = `bench_${schema.slice(-12)}`;
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    await instrument(db, schema, channel);
    // a notification can beat the launch's answer: remember what was heard before anyone waited
    const waiters = new Map<string, () => void>();
    const heard = new Set<string>();
    db.on('notification', (m) => {
      const cid = m.payload ?? '';
      const w = waiters.get(cid);
      if (!w) heard.add(cid);
      else {
        waiters.delete(cid);
        w();
      }
    });
    const whenRunning = (cid: string) => new Promise<void>((resolve, reject) => {
      if (heard.delete(cid)) return resolve();
      const t = setTimeout(() => reject(new Error(`command ${cid} not running within 60 s`)), 60_000);
      waiters.set(cid, () => {
        clearTimeout(t);
        resolve();
      });
    });
    await db.query(`LISTEN ${channel}`);

    const total = latencyN + launches;
    // fresh documents to delete, made ahead (not measured)
    const docs: string[] = [];
    for (let i = 0; i < total; i += connections) {
      const made = await Promise.all(Array.from({ length: Math.min(connections, total - i) }, (_, j) =>
        call('POST', repo, token, { name: `d-${i + j}`, type: 'document' })));
      for (const m of made) {
        if (m.status !== 200) throw new Error(`create: HTTP ${m.status} ${JSON.stringify(m.json)}`);
        docs.push(m.json.uuid as string);
      }
    }
    const launch = async (uuid: string) => {
      const res = await call('POST', `${repo}/command`, token, { command: 'delete', parameters: { source: uuid } });
      if (res.status !== 200) throw new Error(`launch: HTTP ${res.status} ${JSON.stringify(res.json)}`);
      return { cid: res.json.cid as string, at: res.at };
    };
    // Date has ms resolution; the stamp's microseconds are read as text for sub-ms figures
    const preciseRunningAt = async (cids: string[]) => {
      const { rows } = await db.query<{ cid: string; us: string }>(
        `SELECT cid, (extract(epoch FROM at) * 1000000)::bigint::text AS us FROM "${schema}".bench_running WHERE cid = ANY($1::uuid[])`, [cids]);
      return new Map(rows.map((r) => [r.cid, Number(r.us) / 1000]));
    };

    // latency: one at a time on an otherwise idle server
    const idle: number[] = [];
    for (let i = 0; i < latencyN; i++) {
      const { cid, at } = await launch(docs[i]!);
      await whenRunning(cid);
      const running = (await preciseRunningAt([cid])).get(cid);
      if (running === undefined) throw new Error(`no running stamp for ${cid}`);
      idle.push(running - at);
    }

    // throughput: `connections` clients launching back to back
    const loadedDocs = docs.slice(latencyN);
    const answers: { cid: string; at: number; took: number }[] = [];
    let next = 0;
    const cpu0 = procCpuSeconds(server.info.pid) ?? NaN;
    const sys0 = procSyscalls(server.info.pid) ?? NaN;
    const pgCpu = backendCpu(db, schema);
    const fromUs = Number(process.hrtime.bigint() / 1000n);
    const t0 = performance.now();
    const t0Epoch = performance.timeOrigin + t0;
    await Promise.all(Array.from({ length: connections }, async () => {
      while (next < loadedDocs.length) {
        const uuid = loadedDocs[next++]!;
        const s = performance.now();
        const l = await launch(uuid);
        answers.push({ ...l, took: performance.now() - s });
      }
    }));
    const wall = (performance.now() - t0) / 1000;
    // wait until every one of them ran
    const cids = answers.map((a) => a.cid);
    const deadline = Date.now() + 300_000;
    let stamps = await preciseRunningAt(cids);
    while (stamps.size < cids.length) {
      if (Date.now() > deadline) throw new Error(`${cids.length - stamps.size} commands never ran`);
      await new Promise((r) => setTimeout(r, 200));
      stamps = await preciseRunningAt(cids);
    }
    const cpu1 = procCpuSeconds(server.info.pid) ?? NaN;
    const sys1 = procSyscalls(server.info.pid) ?? NaN;
    const pgSeconds = await pgCpu.stop();
    const toUs = Number(process.hrtime.bigint() / 1000n);
    const loaded = answers.map((a) => stamps.get(a.cid)! - a.at).sort((a, b) => a - b);
    const idleSorted = idle.sort((a, b) => a - b);
    return {
      idleP50: quantile(idleSorted, 0.5),
      idleP99: quantile(idleSorted, 0.99),
      launchesPerSec: launches / wall,
      // the whole pipe: from the first launch until the last one was running (API and workers share the process)
      runningPerSec: launches / ((Math.max(...stamps.values()) - t0Epoch) / 1000),
      loadedP50: quantile(loaded, 0.5),
      loadedP99: quantile(loaded, 0.99),
      launchAnswerP50: median(answers.map((a) => a.took)),
      serverCpuMsPerLaunch: ((cpu1 - cpu0) * 1000) / launches,
      pgCpuMsPerLaunch: (pgSeconds * 1000) / launches,
      serverSyscallsPerLaunch: (sys1 - sys0) / launches,
      window: { fromUs, toUs },
    };
  } finally {
    await db.end();
  }
}

/** A detached worktree of `commit` with this checkout's node_modules; removed by the returned function. */
function checkout(commit: string): { dir: string; remove(): void } {
  const dir = path.join(mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-before-')), 'tree');
  execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: ROOT, stdio: 'ignore' });
  if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return {
    dir,
    remove() {
      execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: ROOT, stdio: 'ignore' });
      rmSync(path.dirname(dir), { recursive: true, force: true });
    },
  };
}

const variants: { name: string; root: string }[] = [];
let before: ReturnType<typeof checkout> | undefined;
const cleanups: (() => void)[] = [];
try {
  if (args.before !== 'none') {
    before = checkout(args.before);
    cleanups.push(() => before!.remove());
    variants.push({ name: `before (${args.before})`, root: before.dir });
  }
  const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT }).toString().trim();
  variants.push({ name: `after (${head}${execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: ROOT }).length ? '+changes' : ''})`, root: ROOT });

  const builds = new Map<string, string | undefined>();
  for (const v of variants) {
    if (mode === 'compiled') {
      const built = await compileServers(v.root);
      cleanups.push(built.cleanup);
      builds.set(v.name, built.dir);
    } else {
      builds.set(v.name, undefined);
    }
  }

  const results = new Map<string, Figures[]>(variants.map((v) => [v.name, []]));
  const cpu0 = machineCpu();
  for (let r = 0; r < runs; r++) {
    for (const v of variants) {
      const server = mode === 'compiled'
        ? await spawnServer('bench/server.ts', ['--log-level', 'warn'], [], { compiledDir: builds.get(v.name), cwd: v.root })
        : await spawnServer(path.relative(ROOT, path.join(v.root, 'bench/server.ts')), ['--log-level', 'warn'], [], { cwd: v.root });
      try {
        const f = await measure(server);
        results.get(v.name)!.push(f);
        console.error(`run ${r + 1} ${v.name}: idle p50 ${fmt(f.idleP50)} ms, p99 ${fmt(f.idleP99)} ms; ${fmt(f.launchesPerSec)} launches/s; loaded p50 ${fmt(f.loadedP50)} ms, p99 ${fmt(f.loadedP99)} ms`);
      } finally {
        await server.stop();
      }
    }
  }
  const load = busyCores(cpu0, machineCpu());

  // --profile: one more run per variant under --cpu-prof, summarised (not part of the figures above)
  const profiles: Record<string, ProfileSummary> = {};
  if (args.profile) {
    for (const v of variants) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-prof-'));
      cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
      const nodeArgs = ['--cpu-prof', `--cpu-prof-dir=${dir}`];
      const server = mode === 'compiled'
        ? await spawnServer('bench/server.ts', ['--log-level', 'warn'], nodeArgs, { compiledDir: builds.get(v.name), cwd: v.root })
        : await spawnServer(path.relative(ROOT, path.join(v.root, 'bench/server.ts')), ['--log-level', 'warn'], nodeArgs, { cwd: v.root });
      let window: Figures['window'] | undefined;
      try {
        window = (await measure(server)).window;
      } finally {
        await server.stop();
      }
      const busyMs = (x: ProfileSummary) => x.totalMs * (1 - x.idleShare);
      const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
      const summaries = files.map((f) => summarizeProfile(path.join(dir, f), 25, window)).sort((a, b) => busyMs(b) - busyMs(a));
      if (summaries[0]) profiles[v.name] = summaries[0];
    }
  }

  const med = (name: string, key: Exclude<keyof Figures, 'window'>) => median(results.get(name)!.map((f) => f[key]));
  const rows = variants.map((v) => [
    v.name, fmt(med(v.name, 'idleP50')), fmt(med(v.name, 'idleP99')), fmt(med(v.name, 'launchesPerSec'), 0),
    fmt(med(v.name, 'launchAnswerP50')), fmt(med(v.name, 'loadedP50')), fmt(med(v.name, 'loadedP99')),
    fmt(med(v.name, 'runningPerSec'), 0), fmt(med(v.name, 'serverCpuMsPerLaunch'), 2), fmt(med(v.name, 'pgCpuMsPerLaunch'), 2),
    fmt(med(v.name, 'serverSyscallsPerLaunch'), 1),
  ]);
  console.log(`\nlaunch -> running, delete of a fresh document; ${runs} run(s), medians; machine busy ${fmt(load)} of ${os.cpus().length} cores`);
  printTable(['variant', 'idle p50 ms', 'idle p99 ms', 'launches/s', 'answer p50 ms', 'loaded p50 ms', 'loaded p99 ms', 'running/s', 'server CPU ms/launch', 'pg CPU ms/launch', 'server syscalls/launch'], rows);
  let ratio: number | undefined;
  let pairedRatio: number | undefined;
  if (variants.length === 2) {
    const [b, a] = variants.map((v) => results.get(v.name)!);
    ratio = med(variants[1]!.name, 'launchesPerSec') / med(variants[0]!.name, 'launchesPerSec');
    // runs alternate, so run i of both variants saw about the same machine load: the median of per-run ratios is the steadier figure
    pairedRatio = median(a!.map((f, i) => f.launchesPerSec / b![i]!.launchesPerSec));
    console.log(`\nlaunches/s after / before: ${fmt(ratio, 2)} (medians), ${fmt(pairedRatio, 2)} (median of per-run ratios) (target >= 0.90); idle p50 after: ${fmt(med(variants[1]!.name, 'idleP50'))} ms (target < 100)`);
    console.log(`running/s (first launch to last running) after / before: ${fmt(med(variants[1]!.name, 'runningPerSec') / med(variants[0]!.name, 'runningPerSec'), 2)}`);
    console.log(`server CPU per launch after / before: ${fmt(med(variants[1]!.name, 'serverCpuMsPerLaunch') / med(variants[0]!.name, 'serverCpuMsPerLaunch'), 2)}; PostgreSQL CPU per launch after / before: ${fmt(med(variants[1]!.name, 'pgCpuMsPerLaunch') / med(variants[0]!.name, 'pgCpuMsPerLaunch'), 2)}`);
  }
  for (const [name, summary] of Object.entries(profiles)) {
    console.log(`\n== CPU profile of ${name} (one extra run, whole server process, throughput phase) ==`);
    printSummary(summary);
  }
  const figures = {
    bench: 'launch-latency', runs, latency: latencyN, launches, connections, server: mode, machineBusyCores: load, ratio, pairedRatio,
    results: Object.fromEntries(results),
  };
  console.log(JSON.stringify(figures));
  const after = variants.at(-1)!.name;
  const idleP50 = med(after, 'idleP50');
  const targets: TargetResult[] = [];
  if (ratio !== undefined) targets.push({ name: 'launches/s after / before (medians)', value: ratio, target: '>= 0.90', met: ratio >= 0.9 });
  targets.push({ name: 'idle launch-to-running p50 after, ms', value: idleP50, target: '< 100 ms', met: idleP50 < 100 });
  writeResult('launch-latency', args, {
    figures,
    floors: variants.length === 2 ? { [`launches/s ${variants[0]!.name}`]: med(variants[0]!.name, 'launchesPerSec') } : {},
    ratios: ratio === undefined ? {} : {
      'launches/s after / before (medians)': ratio, 'launches/s after / before (median of per-run ratios)': pairedRatio!,
      'running/s after / before': med(after, 'runningPerSec') / med(variants[0]!.name, 'runningPerSec'),
    },
    targets,
  });
} finally {
  agent.destroy();
  for (const c of cleanups.reverse()) {
    try {
      c();
    } catch (err) {
      console.error(`cleanup: ${(err as Error).message}`);
    }
  }
}
