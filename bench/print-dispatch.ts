/**
 * Print dispatch throughput: jobs printed per second by the dispatch engine
 * (submitPrintJob -> outbox -> relay -> print.dispatch per printer ->
 * socket backend) against the durable floor (bare BullMQ workers with one
 * PostgreSQL row per job, the hand-off committed before the first byte; see
 * `durable()`), and, as context, bare BullMQ workers that write the same
 * bytes to the same TCP sinks (one BullMQ job per print job, no database, no
 * order, no at-most-once bookkeeping). One run each, two phases:
 *
 * - end to end: from the first submission to the last job received, with 20
 *   clients submitting at once;
 * - drain: the jobs are already queued (printers paused / workers not yet
 *   running), then released: dispatch alone. The engine's backlog is
 *   submitted with the printers paused, which is timed as well: submission
 *   alone.
 *
 * Besides jobs/s, the share of the phase this process's event loop was busy, the
 * mean time from sending a statement to its answer per kind, and CPU per job of this process (/proc/self/stat) and of the
 * engine's PostgreSQL backends (application_name = the bench's schema), which
 * move less with the machine's load than the rates do.
 *
 * The printers are TCP sinks in a child process (bench/sink-server.ts).
 *
 * The target: the engine >= 0.9 x the durable floor's jobs/s, end to end and
 * draining (`--durable off` skips the floor and judges nothing). Prints
 * tables and one JSON line, and writes the result file (bench/results/,
 * lib.ts writeResult).
 *
 * Run: npm run bench:print-dispatch [-- --jobs 10000 --printers 20 --bytes 4096 --bare on|off --durable on|off --rows on|off --profile-dir DIR]
 * Needs PostgreSQL (127.0.0.1:5432, db test) and Redis (127.0.0.1:6379).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { parseArgs } from 'node:util';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { AREAS } from '../src/areas/index.js';
import type { Area } from '../src/areas/area.js';
import { submitPrintJob } from '../src/areas/print/jobs/submit-print-job.js';
import { loadConfig } from '../src/config/load.js';
import { createLogger } from '../src/logging/logger.js';
import { printDispatchParts } from '../src/areas/print/dispatch/index.js';
import { startRuntime } from '../src/runtime/runtime.js';
import { startSinks, waitReceived, withClients } from './sinks.js';
import { busyCores, dropRedisPrefix, fmt, machineCpu, pgCpuMeter, printTable, procCpuSeconds, writeResult, type TargetResult } from './lib.js';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '10000' },
    printers: { type: 'string', default: '20' },
    bytes: { type: 'string', default: '4096' },
    clients: { type: 'string', default: '20' },
    // writes engine-<phase>.cpuprofile (the bench process: worker runtime and submitting clients) per engine phase
    'profile-dir': { type: 'string' },
    // 'off': no bare BullMQ floor (context only)
    bare: { type: 'string', default: 'on' },
    // 'off': no durable floor (bare BullMQ with one PostgreSQL row per job; the target's floor): no target judged
    durable: { type: 'string', default: 'on' },
    // 'on': row operations per job in the bench's schema (pg_stat_user_tables; waits 11 s after each phase for idle backends to report)
    rows: { type: 'string', default: 'off' },
  },
});
const JOBS = Number(args.jobs);
const PRINTERS = Number(args.printers);
const BYTES = Number(args.bytes);
const CLIENTS = Number(args.clients);
const DB_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const REDIS_URL = 'redis://127.0.0.1:6379';
const tag = `bench_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
const payload = (n: number) => Buffer.concat([Buffer.from(`job ${n}\n`), Buffer.alloc(BYTES, 0x41)]).subarray(0, BYTES);

/** With --profile-dir: a V8 CPU profile of this process around `fn`, written as engine-<phase>.cpuprofile. */
async function profiled(phase: string, fn: () => Promise<void>): Promise<void> {
  const dir = args['profile-dir'];
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, `engine-${phase}.cpuprofile`), JSON.stringify(profile));
  }
}

/**
 * Statements this process sends to PostgreSQL (every `pg.Client#query` but the
 * monitor's), by kind: the first words of the text with the tables it writes.
 * Measurement only; the engine's statements are unchanged.
 */
const sent = new Map<string, number>();
let monitorClient: pg.Client | undefined;
const clientQuery = pg.Client.prototype.query as (...a: unknown[]) => unknown;
pg.Client.prototype.query = function (this: pg.Client, ...a: unknown[]) {
  if (this !== monitorClient) {
    const q = a[0];
    const text = typeof q === 'string' ? q : (q as { text?: string } | undefined)?.text ?? '';
    const kind = statementKind(text);
    sent.set(kind, (sent.get(kind) ?? 0) + 1);
    const t0 = performance.now();
    const done = () => waited.set(kind, (waited.get(kind) ?? 0) + performance.now() - t0);
    // pg.Pool#query passes a callback
    const cb = a[a.length - 1];
    if (typeof cb === 'function') {
      a[a.length - 1] = (...r: unknown[]) => {
        done();
        return (cb as (...r: unknown[]) => unknown)(...r);
      };
      return clientQuery.apply(this, a);
    }
    const r = clientQuery.apply(this, a);
    // the time from sending to the answer (queueing on the connection included), summed per kind
    if (r && typeof (r as Promise<unknown>).then === 'function') {
      (r as Promise<unknown>).then(done, done);
    }
    return r;
  }
  return clientQuery.apply(this, a);
} as never;
/** Milliseconds between sending a statement and its answer, summed per kind. */
const waited = new Map<string, number>();
const kinds = new Map<string, string>();
/** A statement's kind, kept per text (the engine's texts are constants; only this bench's measurement pays for the regular expressions). */
function statementKind(text: string): string {
  let kind = kinds.get(text);
  if (kind === undefined) {
    kind = kindOf(text);
    if (kinds.size < 1000) kinds.set(text, kind);
  }
  return kind;
}
function kindOf(text: string): string {
  const t = text.trim().replace(/\s+/g, ' ');
  const head = /^(\w+)/.exec(t)?.[1]?.toUpperCase() ?? '?';
  if (['BEGIN', 'COMMIT', 'ROLLBACK', 'SET'].includes(head)) return head;
  const writes = [...new Set([...t.matchAll(/(?:INSERT INTO|UPDATE|DELETE FROM) (\w+)/gi)].map((m) => m[1]))].sort().join('+');
  const lock = /pg_advisory_xact_lock/.test(t) ? ' lock' : '';
  return `${head}${writes ? ` ${writes}` : ''}${lock}`;
}
const sentSnapshot = () => ({ sent: new Map(sent), waited: new Map(waited) });
const sentPerJob = (before: ReturnType<typeof sentSnapshot>) => {
  const out: Record<string, number> = {};
  const latency: Record<string, number> = {};
  let total = 0;
  for (const [k, v] of sent) {
    const d = v - (before.sent.get(k) ?? 0);
    if (d > 0) {
      out[k] = Math.round((d / JOBS) * 1000) / 1000;
      // mean ms from send to answer for this kind
      latency[k] = Math.round((((waited.get(k) ?? 0) - (before.waited.get(k) ?? 0)) / d) * 100) / 100;
    }
    total += d;
  }
  return { total: Math.round((total / JOBS) * 1000) / 1000, byKind: out, msPerStatement: latency };
};
/** Row operations, sequential scans (and the rows they read) and index scans in the bench's schema (pg_stat_user_tables), per job. */
async function tupleCounts(db: pg.Client | undefined, schema: string): Promise<Map<string, number>> {
  const m = new Map<string, number>();
  if (!db || args.rows !== 'on') return m;
  // the statistics of this backend's transaction are a snapshot: clear it so every read is fresh
  await db.query('SELECT pg_stat_clear_snapshot()');
  const { rows } = await db.query<{ relname: string; ins: string; upd: string; hot: string; del: string; seq: string; seqread: string; idx: string }>(
    `SELECT relname, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del, seq_scan AS seq, seq_tup_read AS seqread,
       coalesce(idx_scan, 0) AS idx FROM pg_stat_user_tables WHERE schemaname = $1`, [schema]);
  for (const r of rows) for (const k of ['ins', 'upd', 'hot', 'del', 'seq', 'seqread', 'idx'] as const) m.set(`${r.relname}.${k}`, Number(r[k]));
  return m;
}
const tuplesPerJob = (a: Map<string, number>, b: Map<string, number>) => {
  const out: Record<string, number> = {};
  for (const [k, v] of b) {
    const d = v - (a.get(k) ?? 0);
    if (d > 0) out[k] = Math.round((d / JOBS) * 1000) / 1000;
  }
  return out;
};

/** Redis's CPU seconds so far (INFO cpu: the whole server, so other users of this Redis count too). */
const redisInfo = new Redis(REDIS_URL, { lazyConnect: true });
async function redisCpuSeconds(): Promise<number> {
  if (redisInfo.status === 'wait') await redisInfo.connect();
  const info = await redisInfo.info('cpu');
  const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
  return num('used_cpu_user') + num('used_cpu_sys');
}

/** Wall time, rate, machine-wide busy cores, and CPU per job of this process and of the engine's PostgreSQL backends. */
const timed = async (fn: () => Promise<void>, pgApp?: { db: pg.Client; name: string }, phase?: string) => {
  const meter = pgCpuMeter(pgApp?.db, pgApp?.name ?? '');
  await meter.ready();
  const sent0 = sentSnapshot();
  const tuples0 = await tupleCounts(pgApp?.db, pgApp?.name ?? '');
  const cpu = machineCpu();
  const own0 = procCpuSeconds(process.pid) ?? NaN;
  const redis0 = await redisCpuSeconds();
  const elu0 = performance.eventLoopUtilization();
  const t0 = performance.now();
  await (phase ? profiled(phase, fn) : fn());
  const s = (performance.now() - t0) / 1000;
  const own1 = procCpuSeconds(process.pid) ?? NaN;
  const redis1 = await redisCpuSeconds();
  // the share of the phase this process's event loop was busy (the engine and the submitting clients share it)
  const eventLoop = performance.eventLoopUtilization(performance.eventLoopUtilization(), elu0).utilization;
  const pgSeconds = await meter.stop();
  const statements = sentPerJob(sent0);
  // an idle backend reports its row counts within 10 s (PGSTAT_IDLE_INTERVAL)
  if (pgApp && args.rows === 'on') await new Promise((r) => setTimeout(r, 11_000));
  const tuples = tuplesPerJob(tuples0, await tupleCounts(pgApp?.db, pgApp?.name ?? ''));
  return {
    statementsPerJob: statements, tuplesPerJob: tuples,
    seconds: s, perSecond: JOBS / s, cores: busyCores(cpu, machineCpu()), eventLoop,
    nodeCpuMsPerJob: ((own1 - own0) * 1000) / JOBS,
    redisCpuMsPerJob: ((redis1 - redis0) * 1000) / JOBS,
    pgCpuMsPerJob: pgApp ? (pgSeconds * 1000) / JOBS : 0,
  };
};

async function engine() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-print-'));
  const sinks = await startSinks(PRINTERS);
  const config = loadConfig({
    env: {},
    configDir: path.resolve('config'),
    overrides: {
      dataDir, role: 'worker', logLevel: 'warn',
      // application_name: the meter finds the engine's backends by it
      database: { url: `${DB_URL}?application_name=${tag}`, schema: tag, poolSize: 40 },
      redis: { url: REDIS_URL, prefix: tag },
      queues: { concurrency: { default: 4, print: 32 }, reconcileIntervalMs: 60_000 },
    },
  });
  const log = createLogger(config.logLevel);
  // the print-jobs area wires the engine once it exists; until then the bench adds its part
  const areas: Area[] = AREAS.some((a) => a.name === 'print-jobs') ? [...AREAS] : [...AREAS, { name: 'print-dispatch', ...printDispatchParts }];
  const rt = await startRuntime(config, { api: false, workers: true, areas }, log);
  const s = rt.services;
  const names = sinks.ports.map((_, i) => `bench printer ${i}`);
  for (const [i, port] of sinks.ports.entries()) await s.db.query('INSERT INTO printers (name, connection) VALUES ($1, $2)', [names[i], `socket://127.0.0.1:${port}`]);
  const submit = (n: number) => submitPrintJob({ db: s.db, blobs: s.blobs, outbox: s.outbox, maxBytes: 0, batch: s.config.print.submissions }, {
    printer: names[n % PRINTERS]!, source: Readable.from([payload(n)]), mimeType: 'application/octet-stream',
    name: `job ${n}`, priority: [10, 50, 90][n % 3], creator: 'bench',
  });
  const monitor = new pg.Client({ connectionString: DB_URL });
  monitorClient = monitor;
  await monitor.connect();
  const pgApp = { db: monitor, name: tag };
  try {
    let submitted = 0;
    const t0 = performance.now();
    const e2e = await timed(async () => {
      await withClients(JOBS, CLIENTS, submit);
      submitted = (performance.now() - t0) / 1000;
      await waitReceived(sinks, JOBS);
    }, pgApp, 'e2e');
    await s.db.query('UPDATE printers SET paused = true');
    // submission alone: the printers are paused, so nothing is dispatched meanwhile
    const submitOnly = await timed(() => withClients(JOBS, CLIENTS, (n) => submit(JOBS + n)), pgApp, 'submit');
    const drain = await timed(async () => {
      await s.db.query('UPDATE printers SET paused = false');
      await s.db.transaction(async (tx) => {
        for (const p of names) await s.outbox.add(tx, 'print.dispatch', { printer: p });
      });
      await waitReceived(sinks, 2 * JOBS);
    }, pgApp, 'drain');
    const { rows } = await s.db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM print_jobs GROUP BY status');
    const overlaps = (await sinks.count()).maxConcurrent;
    return { e2e: { ...e2e, submittedPerSecond: JOBS / submitted }, submitOnly, drain, statuses: Object.fromEntries(rows.map((r) => [r.status, r.n])), maxPerPrinter: overlaps };
  } finally {
    await monitor.end();
    await rt.stop();
    sinks.close();
    const c = new pg.Client({ connectionString: DB_URL });
    await c.connect();
    await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
    await c.end();
    // the runtime's queues (meta, ids, events, the housekeeping scheduler) under the engine's prefix
    await dropRedisPrefix(REDIS_URL, tag);
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** What a bare worker does per job: connect, write, half-close, wait for the device to close. */
function sendTo(port: number, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port }, () => sock.end(bytes));
    sock.on('error', reject);
    sock.resume();
    sock.on('close', () => resolve());
  });
}

async function bare() {
  const prefix = `${tag}_bare`;
  const sinks = await startSinks(PRINTERS);
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null };
  const queue = new Queue('bare', { connection, prefix });
  const opts = { removeOnComplete: true, attempts: 5 };
  const processor = async (job: { data: { p: number; n: number } }) => sendTo(sinks.ports[job.data.p]!, payload(job.data.n));
  try {
    let worker = new Worker('bare', processor, { connection, prefix, concurrency: PRINTERS });
    const e2e = await timed(async () => {
      await withClients(JOBS, CLIENTS, (n) => queue.add('print', { p: n % PRINTERS, n }, opts));
      await waitReceived(sinks, JOBS);
    });
    await worker.close();
    worker = new Worker('bare', processor, { connection, prefix, concurrency: PRINTERS, autorun: false });
    for (let i = 0; i < JOBS; i += 1000) {
      await queue.addBulk(Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({ name: 'print', data: { p: (i + k) % PRINTERS, n: JOBS + i + k }, opts })));
    }
    const drain = await timed(async () => {
      void worker.run();
      await waitReceived(sinks, 2 * JOBS);
    });
    await worker.close();
    return { e2e, drain, maxPerPrinter: (await sinks.count()).maxConcurrent };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    sinks.close();
    await dropRedisPrefix(REDIS_URL, prefix);
  }
}

/**
 * The durable floor (`--durable on`, the target's floor): bare BullMQ with the
 * least bookkeeping an at-most-once hand-off needs, the same guarantee the
 * engine gives (one committed PostgreSQL row per job, the hand-off durable
 * before the first byte). Each client INSERTs the job's row (autocommitted,
 * synchronous commit) and adds the BullMQ job; the worker (concurrency 20,
 * as bare) marks the row handed off, committed synchronously before the
 * first byte, sends as bare does, and records the outcome (asynchronous
 * commit, as the engine's outcomes). One table with its primary key only,
 * no order per printer, no statement shared between jobs, no log rows.
 */
async function durable() {
  const prefix = `${tag}_durable`;
  const schema = `${tag}_durable`;
  const sinks = await startSinks(PRINTERS);
  const url = `${DB_URL}?application_name=${schema}`;
  const sync = new pg.Pool({ connectionString: url, max: CLIENTS + PRINTERS });
  const relaxed = new pg.Pool({ connectionString: `${url}&options=${encodeURIComponent('-c synchronous_commit=off')}`, max: PRINTERS });
  const monitor = new pg.Client({ connectionString: DB_URL });
  await monitor.connect();
  const table = `"${schema}".jobs`;
  await monitor.query(`CREATE SCHEMA "${schema}"; CREATE TABLE ${table} (id bigint PRIMARY KEY, printer int NOT NULL, status text NOT NULL,
    created timestamptz NOT NULL DEFAULT now(), handoff_at timestamptz, finished timestamptz, message text)`);
  const connection = { url: REDIS_URL, maxRetriesPerRequest: null };
  const queue = new Queue('durable', { connection, prefix });
  const opts = { removeOnComplete: true, attempts: 5 };
  const processor = async (job: { data: { p: number; n: number } }) => {
    const { p, n } = job.data;
    const { rowCount } = await sync.query(`UPDATE ${table} SET status = 'processing', handoff_at = now() WHERE id = $1 AND status = 'waitprocessing'`, [n]);
    if (rowCount !== 1) return; // handed off before: never sent twice
    await sendTo(sinks.ports[p]!, payload(n));
    await relaxed.query(`UPDATE ${table} SET status = 'processed', finished = now(), message = 'delivered' WHERE id = $1`, [n]);
  };
  const insert = (n: number) => sync.query(`INSERT INTO ${table} (id, printer, status) VALUES ($1, $2, 'waitprocessing')`, [n, n % PRINTERS]);
  const pgApp = { db: monitor, name: schema };
  try {
    let worker = new Worker('durable', processor, { connection, prefix, concurrency: PRINTERS });
    const e2e = await timed(async () => {
      await withClients(JOBS, CLIENTS, async (n) => {
        await insert(n);
        await queue.add('print', { p: n % PRINTERS, n }, opts);
      });
      await waitReceived(sinks, JOBS);
    }, pgApp);
    await worker.close();
    worker = new Worker('durable', processor, { connection, prefix, concurrency: PRINTERS, autorun: false });
    await withClients(JOBS, CLIENTS, (n) => insert(JOBS + n));
    for (let i = 0; i < JOBS; i += 1000) {
      await queue.addBulk(Array.from({ length: Math.min(1000, JOBS - i) }, (_, k) => ({ name: 'print', data: { p: (i + k) % PRINTERS, n: JOBS + i + k }, opts })));
    }
    const drain = await timed(async () => {
      void worker.run();
      await waitReceived(sinks, 2 * JOBS);
    }, pgApp);
    await worker.close();
    const { rows } = await monitor.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE status = 'processed'`);
    return { e2e, drain, processed: rows[0]!.n, maxPerPrinter: (await sinks.count()).maxConcurrent };
  } finally {
    await queue.obliterate({ force: true }).catch(() => {});
    await queue.close();
    sinks.close();
    await sync.end();
    await relaxed.end();
    await monitor.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await monitor.end();
    await dropRedisPrefix(REDIS_URL, prefix);
  }
}

const LOAD_BEFORE = os.loadavg();
const e = await engine();
const b = args.bare === 'off' ? undefined : await bare();
const d = args.durable === 'off' ? undefined : await durable();
const nb = { e2e: { perSecond: NaN, cores: NaN, nodeCpuMsPerJob: NaN }, drain: { perSecond: NaN, cores: NaN, nodeCpuMsPerJob: NaN }, maxPerPrinter: NaN };
const f = b ?? nb;
printTable(['phase', 'engine jobs/s', 'bare BullMQ jobs/s (context)', 'engine / bare', 'machine busy cores (engine / bare)', 'engine Node CPU ms/job', 'engine PG CPU ms/job', 'bare Node CPU ms/job'], [
  ['end to end', fmt(e.e2e.perSecond, 0), fmt(f.e2e.perSecond, 0), fmt(e.e2e.perSecond / f.e2e.perSecond, 2), `${fmt(e.e2e.cores)} / ${fmt(f.e2e.cores)}`,
    fmt(e.e2e.nodeCpuMsPerJob, 2), fmt(e.e2e.pgCpuMsPerJob, 2), fmt(f.e2e.nodeCpuMsPerJob, 2)],
  ['drain', fmt(e.drain.perSecond, 0), fmt(f.drain.perSecond, 0), fmt(e.drain.perSecond / f.drain.perSecond, 2), `${fmt(e.drain.cores)} / ${fmt(f.drain.cores)}`,
    fmt(e.drain.nodeCpuMsPerJob, 2), fmt(e.drain.pgCpuMsPerJob, 2), fmt(f.drain.nodeCpuMsPerJob, 2)],
]);
if (b) console.log(`bare Redis CPU ms/job: end to end ${fmt(b.e2e.redisCpuMsPerJob, 3)}, drain ${fmt(b.drain.redisCpuMsPerJob, 3)}`);
const verdict = (r: number) => `${fmt(r, 2)} (${r >= 0.9 ? 'met' : 'NOT MET'})`;
if (d) {
  console.log(`durable floor (bare BullMQ + one PostgreSQL row per job: hand-off committed before the first byte; the target's floor, target engine >= 0.9 x it): ${d.processed} processed`);
  printTable(['phase', 'durable floor jobs/s', 'engine / durable (target >= 0.9)', 'Node CPU ms/job', 'PG CPU ms/job', 'Redis CPU ms/job', 'busy cores'], [
    ['end to end', fmt(d.e2e.perSecond, 0), verdict(e.e2e.perSecond / d.e2e.perSecond), fmt(d.e2e.nodeCpuMsPerJob, 2), fmt(d.e2e.pgCpuMsPerJob, 2), fmt(d.e2e.redisCpuMsPerJob, 3), fmt(d.e2e.cores)],
    ['drain', fmt(d.drain.perSecond, 0), verdict(e.drain.perSecond / d.drain.perSecond), fmt(d.drain.nodeCpuMsPerJob, 2), fmt(d.drain.pgCpuMsPerJob, 2), fmt(d.drain.redisCpuMsPerJob, 3), fmt(d.drain.cores)],
  ]);
} else {
  console.log('no durable floor (--durable off): the target (engine >= 0.9 x the durable floor) is not judged');
}
console.log(`load average before / after: ${LOAD_BEFORE.map((l) => fmt(l, 1)).join(' ')} / ${os.loadavg().map((l) => fmt(l, 1)).join(' ')}`);
console.log(`engine end to end: submissions alone ${fmt(e.e2e.submittedPerSecond, 0)} jobs/s (submitPrintJob: blob, statement, outbox)`);
console.log(`engine submissions with the printers paused: ${fmt(e.submitOnly.perSecond, 0)} jobs/s, Node CPU ${fmt(e.submitOnly.nodeCpuMsPerJob, 2)} ms/job, PG CPU ${fmt(e.submitOnly.pgCpuMsPerJob, 2)} ms/job`);
for (const [phase, r] of [['end to end', e.e2e], ['submission alone', e.submitOnly], ['drain', e.drain]] as const) {
  console.log(`engine ${phase}: statements per job ${r.statementsPerJob.total} ${JSON.stringify(r.statementsPerJob.byKind)}`);
  console.log(`engine ${phase}: event loop busy ${fmt(r.eventLoop * 100, 0)} % of the phase; Redis CPU ${fmt(r.redisCpuMsPerJob, 3)} ms/job`);
  console.log(`engine ${phase}: ms from send to answer per statement ${JSON.stringify(r.statementsPerJob.msPerStatement)}`);
  if (args.rows === 'on') console.log(`engine ${phase}: rows per job ${JSON.stringify(r.tuplesPerJob)}`);
}
console.log(`engine: ${JSON.stringify(e.statuses)}; at most ${e.maxPerPrinter} job(s) at once per printer (bare: ${f.maxPerPrinter})`);
const figures = { bench: 'print-dispatch', loadBefore: LOAD_BEFORE, loadAfter: os.loadavg(), jobs: JOBS, printers: PRINTERS, bytes: BYTES, clients: CLIENTS, engine: e, bare: b, durable: d };
console.log(JSON.stringify(figures));
const targets: TargetResult[] = d ? (['e2e', 'drain'] as const).map((phase) => {
  const value = e[phase].perSecond / d[phase].perSecond;
  return { name: `engine / durable floor, ${phase === 'e2e' ? 'end to end' : 'drain'} (jobs/s)`, value, target: '>= 0.9', met: value >= 0.9 };
}) : [];
writeResult('print-dispatch', args, {
  figures,
  floors: {
    'durable floor end to end jobs/s': d?.e2e.perSecond ?? NaN, 'durable floor drain jobs/s': d?.drain.perSecond ?? NaN,
    'bare BullMQ end to end jobs/s (context)': b?.e2e.perSecond ?? NaN, 'bare BullMQ drain jobs/s (context)': b?.drain.perSecond ?? NaN,
  },
  ratios: {
    'engine / durable floor, end to end': d ? e.e2e.perSecond / d.e2e.perSecond : NaN, 'engine / durable floor, drain': d ? e.drain.perSecond / d.drain.perSecond : NaN,
    'engine / bare BullMQ, end to end': b ? e.e2e.perSecond / b.e2e.perSecond : NaN, 'engine / bare BullMQ, drain': b ? e.drain.perSecond / b.drain.perSecond : NaN,
    'durable floor / bare BullMQ, end to end': d && b ? d.e2e.perSecond / b.e2e.perSecond : NaN,
  },
  targets,
});
redisInfo.disconnect();
process.exit(0);
