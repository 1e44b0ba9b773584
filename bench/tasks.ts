/**
 * Task throughput benchmark (docs/benchmarks.md): 2,000 one-item tasks of the
 * `demo` mock service with zero item delay, from `start` to `completed`, per
 * second, against the durable floor (the same starts over HTTP, one committed
 * PostgreSQL row per task, BullMQ) in the same run; bare BullMQ and an HTTP
 * floor are run as context.
 *
 *   npm run bench:tasks -- [--tasks 2000] [--connections 16] [--server compiled|tsx]
 *     [--items 1000] [--per-job 1,25,100] [--concurrency N] [--profile-dir DIR] [--count-sql] [--pg-options=OPTS]
 *
 * - **service**: a child server (bench/server.ts: API and workers in one
 *   process, the default configuration, PostgreSQL and the local Redis). The
 *   tasks are created first (not timed), each with one input item whose
 *   metadata sets `mock.delayMs: 0`. Timed: from the first `start` request to
 *   the moment the database shows every task `completed` (polled every 20 ms),
 *   with the starts sent over `--connections` keep-alive clients. So each task
 *   pays the request, its start statement with the outbox row, the relay, one
 *   `task.items` job, the read that takes the item, its final report with the
 *   mock's effect, and the status derivation. Printed per task: the server's
 *   CPU and its PostgreSQL backends' CPU (found by application_name), and
 *   with `--count-sql` the statements it sent during the timed part.
 * - **bare BullMQ** (context): one `Queue` and one `Worker` (concurrency 1, a no-op
 *   processor, completed jobs removed) on a prefix of its own; timed from the
 *   first `add` (over `--connections` concurrent callers) to the last
 *   `completed` event.
 *
 * - **durable floor** (`--durable on`, the default; the target's floor):
 *   the same starts against bench/durable-tasks-server.ts, the least a
 *   service needs to start a task over HTTP durably and run it through
 *   BullMQ (one committed row per start, one per completion).
 *   Then the **HTTP floor** (context): the same server with `--store none`,
 *   where a start is only `queue.add` and a 204 and the processor only
 *   counts: what the HTTP start and the BullMQ job cost on the machine,
 *   nothing durable.
 *
 * - **chunking**: one task of `--items` zero-delay items, start -> completed,
 *   once per `--per-job` value (`queues.taskItemsPerJob`: one job per item
 *   against one job per chunk of items), each in a fresh server.
 *
 * Prints a table, the ratios (target: service >= 0.9 x the durable floor)
 * and one JSON line with the figures and the machine's load, and writes the
 * result file (bench/results/, lib.ts writeResult).
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import pg from 'pg';
import { backendPids, compileServers, dropRedisPrefix, fmt, jsonCall, machineCpu, busyCores, parseModes, pgCpuMeter, printTable, procCpuSplitOf, serverPids, spawnServer, writeResult } from './lib.js';
import { printSummary, summarizeProfile } from './profile.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const REDIS_URL = 'redis://127.0.0.1:6379';

const { values: args } = parseArgs({
  options: {
    tasks: { type: 'string', default: '2000' },
    connections: { type: 'string', default: '16' },
    server: { type: 'string', default: 'compiled' },
    items: { type: 'string', default: '1000' },
    'per-job': { type: 'string', default: '1,25,100' },
    /** queues.concurrency for the tasks queue, and the floors' worker concurrency (default: the configuration's, 16). */
    concurrency: { type: 'string' },
    /** 'off': no durable floor (bench/durable-tasks-server.ts: HTTP start, one PostgreSQL row, BullMQ; the target's floor) nor HTTP floor: no target judged. */
    durable: { type: 'string', default: 'on' },
    /** Count the server's SQL statements during the timed part of the service phase (bench/server.ts --count-sql). */
    'count-sql': { type: 'boolean', default: false },
    /** Extra node flags for the service's server (space-separated), e.g. V8 heap sizes to compare. */
    'node-args': { type: 'string' },
    /** Write a V8 CPU profile of the service phase's server into this directory (summarise with bench:profile). */
    'profile-dir': { type: 'string' },
    /** libpq `options` for the service's server sessions (bench/server.ts --pg-options), e.g. to load auto_explain. */
    'pg-options': { type: 'string' },
    /**
     * Worker processes beside the service's API (bench/server.ts --workers): 0 runs API and workers in one process
     * (role all), n the topology of docker-compose.yml (an API process and n worker processes); server CPU is theirs summed.
     */
    workers: { type: 'string', default: '0' },
  },
  strict: true,
});
const n = Number(args.tasks);
const connections = Number(args.connections);
const [mode] = parseModes(args.server);
if (!Number.isInteger(n) || n < 10 || n > 100_000) throw new Error('--tasks: 10 to 100000');
if (!Number.isInteger(connections) || connections < 1 || connections > 256) throw new Error('--connections: 1 to 256');
const items = Number(args.items);
const perJobs = args['per-job'].split(',').map(Number);
if (!Number.isInteger(items) || items < 0 || items > 100_000) throw new Error('--items: 0 (skip) to 100000');
if (perJobs.some((v) => !Number.isInteger(v) || v < 1 || v > 10_000)) throw new Error('--per-job: a comma list of 1 to 10000');

const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const call = (method: string, url: string, token: string, body?: unknown) => jsonCall(agent, method, url, token, body);


/** Runs `fn(i)` for i in 0..count-1 over `width` concurrent lanes. */
async function lanes(count: number, width: number, fn: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < count) await fn(next++);
  }));
}

/** A server child with `queues.taskItemsPerJob` set through a CONFIG file (the child inherits the environment). */
async function startServer(compiledDir: string | undefined, perJob?: number, nodeArgs: string[] = [], serverArgs: string[] = []) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-tasks-'));
  const file = path.join(dir, 'config.json');
  const queues = {
    ...(perJob ? { taskItemsPerJob: perJob } : {}),
    ...(args.concurrency ? { concurrency: { default: 4, tasks: Number(args.concurrency) } } : {}),
  };
  writeFileSync(file, JSON.stringify({ queues }));
  process.env.CONFIG = file;
  try {
    return await spawnServer('bench/server.ts', ['--log-level', 'warn', '--workers', args.workers, ...serverArgs], nodeArgs, { compiledDir });
  } finally {
    delete process.env.CONFIG;
    rmSync(dir, { recursive: true, force: true });
  }
}

async function waitCompleted(db: pg.Client, schema: string, count: number): Promise<void> {
  for (;;) {
    const { rows } = await db.query<{ done: number; other: number }>(
      `SELECT count(*) FILTER (WHERE status = 'completed')::int AS done, count(*) FILTER (WHERE status NOT IN ('completed', 'processing'))::int AS other FROM "${schema}".tasks`);
    if (rows[0]!.other > 0) throw new Error(`${rows[0]!.other} tasks ended otherwise than completed`);
    if (rows[0]!.done >= count) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One task of `items` zero-delay items, start -> completed, with `perJob` items per `task.items` job. */
async function bigTask(compiledDir: string | undefined, perJob: number): Promise<{ perJob: number; seconds: number; itemsPerSecond: number }> {
  const server = await startServer(compiledDir, perJob);
  const { url, token, schema } = server.info as { url: string; token: string; schema: string };
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const listItems = Array.from({ length: items }, (_, i) => ({ href: `https://example.org/${i}.pdf`, metadata: { mock: { delayMs: 0 } } }));
    const res = await call('POST', `${url}/v1/services/demo/tasks`, token, { name: 'bench big', lists: { input: { embedded: { listItems } } } });
    if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(res.json)}`);
    const t0 = performance.now();
    const started = await call('POST', `${url}/v1/services/demo/tasks/${res.json.tid as string}/action`, token, { action: 'start' });
    if (started.status !== 204) throw new Error(`start: ${started.status}`);
    await waitCompleted(db, schema, 1);
    const seconds = (performance.now() - t0) / 1000;
    return { perJob, seconds, itemsPerSecond: items / seconds };
  } finally {
    await db.end();
    await server.stop();
  }
}

/** What bench/server.ts --count-sql writes on SIGUSR2: statements by text, their summed round trips, the event loop. */
interface SqlCounts {
  counts: Record<string, number>;
  millis: Record<string, number>;
  /** Per text: summed idle time between an answer and the next call while none of that text was in flight. */
  gaps: Record<string, number>;
  /** HTTP requests the server answered, and their summed time from its 'request' event to the response's 'finish'. */
  requests: { n: number; ms: number };
  /** Socket writes (calls of the socket's write path) and reads (chunks received) by peer: postgres, redis, http. */
  sockets?: { writes: Record<string, number>; reads: Record<string, number> };
  eventLoop: { utilization: number; delayP50Ms: number; delayP99Ms: number; delayMaxMs: number };
}

/** The server's statement counts by text since the last call (bench/server.ts --count-sql), read after a SIGUSR2. */
async function sqlCounts(pid: number, file: string): Promise<SqlCounts> {
  rmSync(file, { force: true });
  process.kill(pid, 'SIGUSR2');
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    try {
      const counts = JSON.parse(readFileSync(file, 'utf8')) as SqlCounts;
      rmSync(file, { force: true });
      return counts;
    } catch {
      // not written yet (or half written)
    }
  }
  throw new Error('the server did not write its SQL counts');
}

async function service(compiledDir: string | undefined): Promise<{
  seconds: number; perSecond: number; createSeconds: number; startsSeconds: number; serverCpuMsPerTask: number; serverSysMsPerTask?: number; serverProcesses: number; pgCpuMsPerTask: number; pgBackends: number;
  sqlPerTask?: number; sql?: SqlCounts; startMs: { mean: number; p50: number; p99: number };
}> {
  const sqlFile = args['count-sql'] ? path.join(os.tmpdir(), `wcr-bench-tasks-sql-${process.pid}.json`) : undefined;
  const nodeArgs = [...(args['node-args']?.split(' ').filter(Boolean) ?? []), ...(args['profile-dir'] ? ['--cpu-prof', '--cpu-prof-dir', args['profile-dir']] : [])];
  const server = await startServer(compiledDir, undefined, nodeArgs,
    [...(sqlFile ? ['--count-sql', sqlFile] : []), ...(args['pg-options'] ? [`--pg-options=${args['pg-options']}`] : [])]);
  const { url, token, schema } = server.info as { url: string; token: string; schema: string };
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const tids: string[] = [];
    const c0 = performance.now();
    await lanes(n, connections, async (i) => {
      const res = await call('POST', `${url}/v1/services/demo/tasks`, token, {
        name: `bench ${i}`,
        lists: { input: { embedded: { listItems: [{ href: `https://example.org/${i}.pdf`, metadata: { mock: { delayMs: 0 } } }] } } },
      });
      if (res.status !== 200) throw new Error(`create: ${res.status} ${JSON.stringify(res.json)}`);
      tids.push(res.json.tid as string);
    });
    const createSeconds = (performance.now() - c0) / 1000;
    // the server's PostgreSQL backends (application_name = its schema), sampled every 200 ms: ones opened during
    // the run count from zero, ones the pool closes during it up to their last sample
    const pids0 = await backendPids(DATABASE_URL, schema);
    const meter = pgCpuMeter(db, schema);
    await meter.ready();
    if (sqlFile) await sqlCounts(server.info.pid, sqlFile); // resets the count
    const pids = serverPids(server.info);
    const split0 = procCpuSplitOf(pids);
    window.fromUs = Number(process.hrtime.bigint() / 1000n);
    const t0 = performance.now();
    const latencies: number[] = [];
    await lanes(n, connections, async (i) => {
      const s0 = performance.now();
      const res = await call('POST', `${url}/v1/services/demo/tasks/${tids[i]}/action`, token, { action: 'start' });
      latencies.push(performance.now() - s0);
      if (res.status !== 204) throw new Error(`start: ${res.status} ${JSON.stringify(res.json)}`);
    });
    latencies.sort((a, b) => a - b);
    const startMs = {
      mean: latencies.reduce((a, b) => a + b, 0) / n, p50: latencies[Math.floor(n / 2)]!, p99: latencies[Math.floor(n * 0.99)]!,
    };
    const startsSeconds = (performance.now() - t0) / 1000;
    await waitCompleted(db, schema, n);
    const seconds = (performance.now() - t0) / 1000;
    window.toUs = Number(process.hrtime.bigint() / 1000n);
    const split1 = procCpuSplitOf(pids);
    const serverCpuMsPerTask = split0 && split1 ? ((split1.user + split1.system - split0.user - split0.system) * 1000) / n : NaN;
    const serverSysMsPerTask = split0 && split1 ? ((split1.system - split0.system) * 1000) / n : undefined;
    const serverProcesses = pids.length;
    const sql = sqlFile ? await sqlCounts(server.info.pid, sqlFile) : undefined;
    const pgCpuMsPerTask = ((await meter.stop()) * 1000) / n;
    const pids1 = [...new Set([...pids0, ...(await backendPids(DATABASE_URL, schema))])];
    if (server.logBytes() > 0) console.error(`the server logged ${server.logBytes()} bytes during the run`);
    return {
      seconds, perSecond: n / seconds, createSeconds, startsSeconds, serverCpuMsPerTask, serverSysMsPerTask, serverProcesses, pgCpuMsPerTask, pgBackends: pids1.length, startMs,
      ...(sql ? { sqlPerTask: Object.values(sql.counts).reduce((a, b) => a + b, 0) / n, sql } : {}),
    };
  } finally {
    await db.end();
    await server.stop();
  }
}

/** The timed part of the service phase on CLOCK_MONOTONIC (µs), to summarise the server's profile over it alone. */
const window = { fromUs: 0, toUs: 0 };

async function bare(): Promise<{ seconds: number; perSecond: number }> {
  const prefix = `bench-bare-${Date.now().toString(36)}`;
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null };
  const queue = new Queue('bare', { connection, prefix, defaultJobOptions: { removeOnComplete: true } });
  let done = 0;
  let finished!: () => void;
  const all = new Promise<void>((r) => (finished = r));
  const worker = new Worker('bare', async () => undefined, { connection, prefix, concurrency: 1 });
  worker.on('completed', () => {
    if (++done === n) finished();
  });
  await worker.waitUntilReady();
  await queue.waitUntilReady();
  try {
    const t0 = performance.now();
    await lanes(n, connections, async (i) => {
      await queue.add('job', { i }, { jobId: `job-${i}` });
    });
    await all;
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, perSecond: n / seconds };
  } finally {
    await worker.close();
    await queue.obliterate({ force: true }).catch(() => undefined);
    await queue.close();
    await dropRedisPrefix(REDIS_URL, prefix);
  }
}

/**
 * The durable floor (the target's floor): the same clients start `n` tasks
 * over HTTP on bench/durable-tasks-server.ts (Koa, one autocommitted UPDATE
 * per start, `queue.add`, a BullMQ worker of concurrency `--concurrency`, by
 * default the service's tasks queue's (16 in config/default.yaml), that completes the row in one UPDATE), timed from the first
 * start until the database shows every row completed, as the service is.
 * With `store` 'none', the HTTP floor (context): the same server without a
 * database (`--store none`), timed until its worker has counted every job.
 */
async function floorService(compiledDir: string | undefined, store: 'postgres' | 'none' = 'postgres'): Promise<{ seconds: number; perSecond: number; serverCpuMsPerTask: number; pgCpuMsPerTask: number; concurrency: number }> {
  const concurrency = Number(args.concurrency ?? 16); // the tasks queue's slots in config/default.yaml: the same worker capacity as the service
  const server = await spawnServer('bench/durable-tasks-server.ts', ['--tasks', String(n), '--concurrency', String(concurrency), '--store', store], [], { compiledDir });
  const { url, schema } = server.info as { url: string; schema: string };
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const meter = pgCpuMeter(db, schema);
    await meter.ready();
    const pids = [server.info.pid];
    const split0 = procCpuSplitOf(pids);
    const t0 = performance.now();
    await lanes(n, connections, async (i) => {
      const res = await call('POST', `${url}/tasks/${i}/start`, '');
      if (res.status !== 204) throw new Error(`durable floor start: ${res.status}`);
    });
    if (store === 'postgres') await waitCompleted(db, schema, n);
    else {
      // no database: the server counts the jobs its worker completed
      while (((await call('GET', `${url}/completed`, '')).json as { completed: number }).completed < n) await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - t0) / 1000;
    const split1 = procCpuSplitOf(pids);
    const serverCpuMsPerTask = split0 && split1 ? ((split1.user + split1.system - split0.user - split0.system) * 1000) / n : NaN;
    return { seconds, perSecond: n / seconds, serverCpuMsPerTask, pgCpuMsPerTask: ((await meter.stop()) * 1000) / n, concurrency };
  } finally {
    await db.end();
    await server.stop();
  }
}

const load0 = os.loadavg();
const cpu0 = machineCpu();
const compiled = mode === 'compiled' ? await compileServers() : undefined;
let floor: Awaited<ReturnType<typeof bare>>;
let ours: Awaited<ReturnType<typeof service>>;
let durableFloor: Awaited<ReturnType<typeof floorService>> | undefined;
let httpFloor: Awaited<ReturnType<typeof floorService>> | undefined;
const big: Awaited<ReturnType<typeof bigTask>>[] = [];
try {
  floor = await bare();
  ours = await service(compiled?.dir);
  if (args.durable !== 'off') {
    durableFloor = await floorService(compiled?.dir);
    httpFloor = await floorService(compiled?.dir, 'none');
  }
  if (items > 0) for (const perJob of perJobs) big.push(await bigTask(compiled?.dir, perJob));
} finally {
  compiled?.cleanup();
}
const cpu1 = machineCpu();
if (args['profile-dir']) {
  // the newest profile in the directory is the service phase's server
  const dir = args['profile-dir'];
  const file = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).sort().pop();
  if (file) printSummary(summarizeProfile(path.join(dir, file), 30, window));
}
const ratio = ours.perSecond / floor.perSecond;
const durableRatio = durableFloor ? ours.perSecond / durableFloor.perSecond : undefined;
printTable(['what', 'seconds', 'per second'], [
  [`bare BullMQ (context): ${n} no-op jobs, one worker`, fmt(floor.seconds, 2), fmt(floor.perSecond, 0)],
  [`service: ${n} one-item mock tasks, start -> completed`, fmt(ours.seconds, 2), fmt(ours.perSecond, 0)],
]);
console.log(`ratio service / bare BullMQ: ${fmt(ratio, 2)} (context); creating the tasks took ${fmt(ours.createSeconds, 1)} s (not timed); the ${n} start requests were answered after ${fmt(ours.startsSeconds, 2)} s; server CPU ${fmt(ours.serverCpuMsPerTask, 2)} ms${ours.serverProcesses > 1 ? ` (API and ${ours.serverProcesses - 1} worker process(es) summed)` : ''} (${ours.serverSysMsPerTask === undefined ? '?' : fmt(ours.serverSysMsPerTask, 2)} ms of it in the kernel) and PostgreSQL CPU ${fmt(ours.pgCpuMsPerTask, 2)} ms per task (${ours.pgBackends} backends)`);
if (durableFloor) {
  console.log(`durable floor (HTTP start: one PostgreSQL row committed, queue.add; a BullMQ worker of concurrency ${durableFloor.concurrency} completes the row; the target's floor): ${fmt(durableFloor.perSecond, 0)} tasks/s in ${fmt(durableFloor.seconds, 2)} s (${fmt(durableFloor.perSecond / floor.perSecond, 2)} x bare BullMQ); service / durable floor: ${fmt(durableRatio!, 2)} (target >= 0.9: ${durableRatio! >= 0.9 ? 'met' : 'NOT MET'}); its server CPU ${fmt(durableFloor.serverCpuMsPerTask, 2)} ms and PostgreSQL CPU ${fmt(durableFloor.pgCpuMsPerTask, 2)} ms per task`);
} else {
  console.log('no durable floor (--durable off): the target (service >= 0.9 x the durable floor) is not judged');
}
if (httpFloor) {
  console.log(`HTTP floor (HTTP start: queue.add only; a BullMQ worker of concurrency ${httpFloor.concurrency} counts it; no database; context, not the target): ${fmt(httpFloor.perSecond, 0)} tasks/s in ${fmt(httpFloor.seconds, 2)} s (${fmt(httpFloor.perSecond / floor.perSecond, 2)} x bare BullMQ); service / HTTP floor: ${fmt(ours.perSecond / httpFloor.perSecond, 2)}; its server CPU ${fmt(httpFloor.serverCpuMsPerTask, 2)} ms per task`);
}
console.log(`start requests as the clients saw them: mean ${fmt(ours.startMs.mean, 1)} ms, p50 ${fmt(ours.startMs.p50, 1)} ms, p99 ${fmt(ours.startMs.p99, 1)} ms`);
if (ours.sql) {
  const { counts, millis, gaps, requests, eventLoop } = ours.sql;
  console.log(`requests as the server saw them (headers parsed to response written): ${requests.n}, mean ${fmt(requests.ms / Math.max(1, requests.n), 1)} ms`);
  console.log(`SQL statements sent per task: ${fmt(ours.sqlPerTask!, 2)} (per task; the mean round trip from the call to the answer; the mean idle gap from an answer to the next call of the same text when none was in flight)`);
  for (const [text, count] of Object.entries(counts)) {
    if (count / n >= 0.01) {
      console.log(`  ${fmt(count / n, 2).padStart(6)}  ${fmt((millis[text] ?? 0) / count, 2).padStart(6)} ms  ${fmt((gaps[text] ?? 0) / count, 2).padStart(6)} ms  ${text}`);
    }
  }
  if (ours.sql.sockets) {
    const per = (r: Record<string, number>) => Object.entries(r).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${fmt(v / n, 2)}`).join(', ');
    console.log(`socket writes per task: ${per(ours.sql.sockets.writes)}; reads (chunks received) per task: ${per(ours.sql.sockets.reads)}`);
  }
  console.log(`server event loop over the timed part: ${fmt(eventLoop.utilization * 100, 0)} % busy, a 5 ms timer late by p50 ${fmt(eventLoop.delayP50Ms, 1)} ms, p99 ${fmt(eventLoop.delayP99Ms, 1)} ms, max ${fmt(eventLoop.delayMaxMs, 1)} ms`);
}
if (big.length > 0) {
  printTable([`one ${items}-item task: items per job`, 'seconds', 'items per second'], big.map((b) => [b.perJob, fmt(b.seconds, 2), fmt(b.itemsPerSecond, 0)]));
}
const figures = {
  bench: 'tasks', tasks: n, workers: Number(args.workers), connections, server: mode, concurrency: args.concurrency ?? 'default', bare: floor, service: ours, ratio, durableRatio, durable: durableFloor, http: httpFloor, bigTask: big,
  loadavg: { before: load0, after: os.loadavg() }, busyCores: busyCores(cpu0, cpu1), cores: os.cpus().length,
  ...(args['profile-dir'] ? { profileWindowUs: window } : {}),
};
console.log(JSON.stringify(figures));
writeResult('tasks', args, {
  figures,
  floors: {
    'durable floor tasks/s': durableFloor?.perSecond ?? NaN, 'HTTP floor tasks/s (context)': httpFloor?.perSecond ?? NaN, 'bare BullMQ jobs/s (context)': floor.perSecond,
  },
  ratios: {
    'service / durable floor': durableRatio ?? NaN, 'service / HTTP floor': httpFloor ? ours.perSecond / httpFloor.perSecond : NaN, 'service / bare BullMQ': ratio,
    'durable floor / bare BullMQ': durableFloor ? durableFloor.perSecond / floor.perSecond : NaN, 'HTTP floor / bare BullMQ': httpFloor ? httpFloor.perSecond / floor.perSecond : NaN,
  },
  targets: durableRatio === undefined ? [] : [{ name: 'service / durable floor (tasks/s)', value: durableRatio, target: '>= 0.9', met: durableRatio >= 0.9 }],
});
agent.destroy();
