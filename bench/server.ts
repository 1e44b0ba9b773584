/**
 * Benchmark helper: starts the whole runtime (API + workers) in this process
 * with its own temporary DATA_DIR, PostgreSQL schema and Redis prefix, and
 * prints one JSON line on stdout:
 *
 *   {"bench":"server","url":"http://127.0.0.1:PORT","token":"...","pid":123,"schema":"bench_x","prefix":"bench-x","dataDir":"/tmp/...","logLevel":"info"}
 *
 * The runtime's own logs also go to stdout (pino), so readers pick the line
 * with `"bench":"server"`. On SIGTERM/SIGINT, or when stdin closes (the parent
 * died), it stops the runtime, drops its schema and Redis keys, removes its
 * DATA_DIR and exits 0 (so `--cpu-prof` profiles get written).
 *
 * Flags: --log-level <fatal|error|warn|info|debug|trace|silent> (default: the
 * configuration's, i.e. LOG_LEVEL or `info`), --keep (leave schema/keys/files),
 * --count-sql <file> (count the SQL statements sent, by text, with their summed
 * round-trip milliseconds, and measure the event loop's utilization and delay; on
 * SIGUSR2 the figures since the last SIGUSR2 are written to the file as JSON),
 * --pg-options=<string> (libpq `options` for the server's PostgreSQL sessions, e.g.
 * `-c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=0` to
 * have every statement's plan written to the PostgreSQL server's log),
 * --workers <n> (default 0: API and workers in this one process, role `all`; n > 0:
 * the topology of docker-compose.yml, this process the API alone (role `api`) and n
 * worker processes (role `worker`) started by it on the same schema, prefix and
 * DATA_DIR; their pids are the ready line's `workerPids`, and they stop before the
 * storage is dropped).
 *
 * Run: node --import tsx bench/server.ts [--log-level warn]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { loadConfig } from '../src/config/load.js';
import { readEnv } from '../src/config/env.js';
import { createLogger } from '../src/logging/logger.js';
import { startRuntime } from '../src/runtime/runtime.js';
import { dropRedisPrefix } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const REDIS_URL = 'redis://127.0.0.1:6379';

const { values: args } = parseArgs({
  options: {
    'log-level': { type: 'string' },
    keep: { type: 'boolean', default: false },
    'no-listing-cache': { type: 'boolean', default: false },
    'count-sql': { type: 'string' },
    'pg-options': { type: 'string' },
    workers: { type: 'string', default: '0' },
    // internal: a worker process of a --workers API, on its schema, prefix and DATA_DIR (JSON)
    attach: { type: 'string' },
  },
  strict: true,
});

const attached = args.attach ? JSON.parse(args.attach) as { schema: string; prefix: string; dataDir: string } : undefined;
const workerCount = Number(args.workers);
if (!Number.isInteger(workerCount) || workerCount < 0 || workerCount > 8) throw new Error(`bench/server: --workers ${args.workers} is not 0..8`);
const role: 'all' | 'api' | 'worker' = attached ? 'worker' : workerCount > 0 ? 'api' : 'all';
const suffix = `${Date.now().toString(36)}${randomBytes(4).toString('hex')}`;
const schema = attached?.schema ?? `bench_${suffix}`;
const prefix = attached?.prefix ?? `bench-${suffix}`;
const dataDir = attached?.dataDir ?? await mkdtemp(path.join(os.tmpdir(), 'wcr-bench-server-'));

const config = loadConfig({
  env: readEnv(),
  overrides: {
    dataDir,
    role,
    ...(args['log-level'] ? { logLevel: args['log-level'] } : {}),
    server: { port: 0, host: '127.0.0.1', ...(args['no-listing-cache'] ? { listingCacheBytes: 0 } : {}) },
    redis: { url: REDIS_URL, prefix },
    // application_name lets the benchmarks find this server's PostgreSQL backends (pg_stat_activity) and their CPU
    // --pg-options: libpq's `options` for every connection of the server (e.g. auto_explain, to read the plans)
    database: { url: `${DATABASE_URL}?application_name=${schema}${args['pg-options'] ? `&options=${encodeURIComponent(args['pg-options'])}` : ''}`, schema },
  },
});
const log = createLogger(config.logLevel);

if (args['count-sql']) {
  // every statement goes through pg.Client#query (pooled clients too); counted by its text, with the time from the
  // call to its answer (the statement's round trip as the client sees it: PostgreSQL's work, its commit, and the
  // wait for this event loop to read the answer; not the wait for a pooled connection)
  const file = args['count-sql'];
  const counts = new Map<string, number>();
  const millis = new Map<string, number>();
  // per text: statements in flight, when the last one answered, and the summed gaps between an answer and the
  // next call while none was in flight (how long a kind of statement one at a time sat idle between two)
  const open = new Map<string, number>();
  const lastDone = new Map<string, number>();
  const gaps = new Map<string, number>();
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let elu = performance.eventLoopUtilization();
  const query = pg.Client.prototype.query as (...a: unknown[]) => unknown;
  (pg.Client.prototype as unknown as { query: (...a: unknown[]) => unknown }).query = function (this: unknown, ...a: unknown[]) {
    const text = typeof a[0] === 'string' ? a[0] : (a[0] as { text?: string } | undefined)?.text;
    const key = String(text).replace(/\s+/g, ' ').trim().slice(0, 100);
    counts.set(key, (counts.get(key) ?? 0) + 1);
    const t0 = performance.now();
    if (!open.get(key) && lastDone.has(key)) gaps.set(key, (gaps.get(key) ?? 0) + t0 - lastDone.get(key)!);
    open.set(key, (open.get(key) ?? 0) + 1);
    const took = () => {
      const t1 = performance.now();
      millis.set(key, (millis.get(key) ?? 0) + t1 - t0);
      open.set(key, open.get(key)! - 1);
      lastDone.set(key, t1);
    };
    const last = a.length - 1;
    if (typeof a[last] === 'function') {
      const cb = a[last] as (...r: unknown[]) => unknown;
      a[last] = (...r: unknown[]) => {
        took();
        return cb(...r);
      };
      return query.apply(this, a);
    }
    const res = query.apply(this, a);
    if (res && typeof (res as Promise<unknown>).then === 'function') (res as Promise<unknown>).then(took, took);
    return res;
  };
  // HTTP requests: from the server's 'request' event (headers parsed) to the response's 'finish' (written)
  const requests = { n: 0, ms: 0 };
  const emit = http.Server.prototype.emit as (this: http.Server, event: string, ...a: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, event: string, ...a: unknown[]) {
    if (event === 'request') {
      const t0 = performance.now();
      (a[1] as http.ServerResponse).once('finish', () => {
        requests.n++;
        requests.ms += performance.now() - t0;
      });
    }
    return emit.call(this, event, ...a);
  } as typeof http.Server.prototype.emit;
  // socket writes (one write or writev system call each, unless the kernel takes part of it) and reads
  // (chunks pushed into the socket's stream) by peer: PostgreSQL, Redis, or an HTTP client of this server
  const writes: Record<string, number> = {};
  const reads: Record<string, number> = {};
  const peerOf = (s: net.Socket): string => (s.remotePort === 5432 ? 'postgres' : s.remotePort === 6379 ? 'redis' : s.remotePort === undefined ? 'other' : 'http');
  const proto = net.Socket.prototype as unknown as { _writeGeneric: (...a: unknown[]) => unknown; push: (...a: unknown[]) => boolean };
  const writeGeneric = proto._writeGeneric;
  proto._writeGeneric = function (this: net.Socket, ...a: unknown[]) {
    const k = peerOf(this);
    writes[k] = (writes[k] ?? 0) + 1;
    return writeGeneric.apply(this, a);
  };
  const push = proto.push;
  proto.push = function (this: net.Socket, ...a: unknown[]) {
    if (a[0] !== null) {
      const k = peerOf(this);
      reads[k] = (reads[k] ?? 0) + 1;
    }
    return push.apply(this, a);
  };
  process.on('SIGUSR2', () => {
    const now = performance.eventLoopUtilization(elu);
    writeFileSync(file, JSON.stringify({
      counts: Object.fromEntries([...counts].sort((x, y) => y[1] - x[1])),
      millis: Object.fromEntries(millis),
      gaps: Object.fromEntries(gaps),
      requests: { ...requests },
      sockets: { writes: { ...writes }, reads: { ...reads } },
      // the histogram holds the intervals between the 5 ms timer's runs: minus 5 ms, how late it ran
      eventLoop: {
        utilization: now.utilization, delayP50Ms: delay.percentile(50) / 1e6 - 5, delayP99Ms: delay.percentile(99) / 1e6 - 5, delayMaxMs: delay.max / 1e6 - 5,
      },
    }));
    counts.clear();
    millis.clear();
    gaps.clear();
    for (const k of Object.keys(writes)) delete writes[k];
    for (const k of Object.keys(reads)) delete reads[k];
    requests.n = 0;
    requests.ms = 0;
    lastDone.clear();
    delay.reset();
    elu = performance.eventLoopUtilization();
  });
}

async function dropStorage(): Promise<void> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
  await dropRedisPrefix(REDIS_URL, prefix);
  await rm(dataDir, { recursive: true, force: true });
}

// Signals that arrive while the runtime is starting are honoured once it is up.
let pendingSignal: string | undefined;
const early = (sig: string) => () => {
  pendingSignal ??= sig;
};
process.on('SIGTERM', early('SIGTERM'));
process.on('SIGINT', early('SIGINT'));

let runtime: Awaited<ReturnType<typeof startRuntime>>;
try {
  runtime = await startRuntime(config, { api: role !== 'worker', workers: role !== 'api' }, log);
} catch (err) {
  process.stderr.write(`bench/server: cannot start the runtime: ${(err as Error).stack ?? String(err)}\n`);
  if (!args.keep && !attached) await dropStorage().catch(() => {});
  process.exit(1);
}

/** The worker processes of a --workers API: this script again with --attach, the same node options; ready when they say so. */
const workers: ChildProcess[] = [];
async function startWorkers(): Promise<number[]> {
  // the API's own options but these two (the statement counts are the API's)
  const own = (a: string | undefined) => a === '--workers' || a === '--count-sql';
  const forwarded = process.argv.slice(2).filter((a, i, all) => !own(a) && !own(all[i - 1]) && !a.startsWith('--workers=') && !a.startsWith('--count-sql='));
  return Promise.all(Array.from({ length: workerCount }, () => new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...forwarded, '--attach', JSON.stringify({ schema, prefix, dataDir })], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    workers.push(child);
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{"bench":"worker"')) continue;
        child.stdout!.off('data', onData);
        child.stdout!.resume(); // its logs from now on are not read
        resolve(child.pid!);
      }
    };
    child.stdout!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`bench/server: a worker process exited (${code}) before it was ready`)));
  })));
}
async function stopWorkers(): Promise<void> {
  await Promise.all(workers.map((w) => new Promise<void>((resolve) => {
    if (w.exitCode !== null || w.signalCode !== null) return resolve();
    w.once('exit', () => resolve());
    w.kill('SIGTERM');
  })));
}
let workerPids: number[] = [];
if (workerCount > 0) {
  try {
    workerPids = await startWorkers();
  } catch (err) {
    process.stderr.write(`bench/server: ${(err as Error).message}\n`);
    await stopWorkers();
    await runtime.stop().catch(() => {});
    if (!args.keep) await dropStorage().catch(() => {});
    process.exit(1);
  }
}
let token: string | undefined;
if (!attached) {
  if (!runtime.services.devIssuer) throw new Error('bench/server: no development issuer (is OIDC_ISSUER set?)');
  token = await runtime.services.devIssuer.mint({ user: 'bench', roles: ['admin'], expiresIn: 6 * 3600 });
}

let stopping = false;
async function shutdown(reason: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  const force = setTimeout(() => {
    process.stderr.write('bench/server: shutdown took longer than 30 s; exiting\n');
    process.exit(2);
  }, 30_000);
  force.unref();
  try {
    await runtime.stop();
    // a worker process stops before its API drops what they share
    await stopWorkers();
    if (attached) process.exit(0);
    // services.db is closed by stop(); the schema is dropped over a fresh connection
    if (!args.keep) await dropStorage();
    process.stderr.write(`bench/server: stopped (${reason})${args.keep ? '' : `; dropped schema ${schema}, prefix ${prefix}, ${dataDir}`}\n`);
    process.exit(0);
  } catch (err) {
    process.stderr.write(`bench/server: shutdown failed: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  }
}
process.removeAllListeners('SIGTERM');
process.removeAllListeners('SIGINT');
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));
if (pendingSignal) void shutdown(pendingSignal);
// The parent keeps stdin open; EOF means it is gone, so do not linger.
process.stdin.on('end', () => void shutdown('stdin closed'));
process.stdin.on('error', () => void shutdown('stdin error'));
process.stdin.resume();

process.stdout.write(`${JSON.stringify(attached ? { bench: 'worker', pid: process.pid } : {
  bench: 'server', url: runtime.url, token, pid: process.pid, schema, prefix, dataDir, logLevel: config.logLevel, workerPids,
})}\n`);
