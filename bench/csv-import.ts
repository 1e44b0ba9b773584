/**
 * CSV import benchmark (docs/benchmarks.md): a 1,000,000-row CSV posted as
 * ONE task (`POST /v1/services/demo/tasks`, `Content-Type: text/csv`) or as
 * one per-user list (`--target lists`: `POST /v1/lists`), against csv-parse
 * alone reading the same file, one run each.
 *
 *   npm run bench:csv -- [--rows 1000000] [--target tasks|lists] [--server compiled|tsx] [--profile-dir DIR]
 *
 * - **csv-parse alone**: `fs.createReadStream(file)` piped into `parse()`
 *   (default options plus `bom`), records counted in a `for await`; rows/s.
 * - **service**: a child server (bench/server.ts: API and workers in one
 *   process, PostgreSQL, the default configuration with `lists.maxItems`
 *   raised to fit). Timed: from the first byte sent to the 200 answer, i.e.
 *   the request streamed through the parser into the store in one
 *   transaction, committed. The server's RSS is sampled every 50 ms
 *   (VmRSS, /proc/<pid>/status) and VmHWM read at the end; the item count is
 *   checked in the database, and the sizes of `list_items` and its indexes
 *   printed (they do not swing with load).
 *
 * - **durable floor** (`--durable on`, the default; context, not the
 *   target's floor): csv-parse into a table with a primary key only by COPY
 *   in one transaction, in this process (`durableFloor`).
 *
 * Prints a table, the ratio (target >= 0.5; peak RSS < 300 MiB) and one JSON
 * line with every figure, and writes the result file (bench/results/, lib.ts
 * writeResult).
 */
import { createReadStream, createWriteStream, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { parse } from 'csv-parse';
import pg from 'pg';
import { copyIn } from '../src/storage/driver/postgres.js';
import { compileServers, fmt, machineCpu, busyCores, MiB, parseModes, printTable, procCpuSeconds, procMemory, RssSampler, spawnServer, threadCpuSeconds, writeResult } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    target: { type: 'string', default: 'tasks' },
    server: { type: 'string', default: 'compiled' },
    'profile-dir': { type: 'string' },
    // 'off': no durable floor (csv-parse into a plain table by COPY; context, not the target's floor)
    durable: { type: 'string', default: 'on' },
  },
  strict: true,
});
const rows = Number(args.rows);
if (!Number.isInteger(rows) || rows < 1) throw new Error('--rows: a positive whole number');
const target = args.target;
if (target !== 'tasks' && target !== 'lists') throw new Error('--target: tasks or lists');
const [mode] = parseModes(args.server);

/** Writes the CSV: a header and `n` rows of a repository href and two metadata columns (about 90 bytes a row). */
async function writeCsv(file: string, n: number): Promise<void> {
  const out = createWriteStream(file);
  out.write('item.href,item.metadata.name,item.metadata.copies\r\n');
  let batch = '';
  for (let i = 0; i < n; i++) {
    batch += `/v1/services/store/repo/${randomUUID()},"Document ${i}, page 1",${i % 5}\r\n`;
    if (batch.length > 256 * 1024) {
      if (!out.write(batch)) await once(out, 'drain');
      batch = '';
    }
  }
  out.end(batch);
  await once(out, 'finish');
}

async function parserAlone(file: string): Promise<{ seconds: number; rowsPerSecond: number; records: number }> {
  const start = process.hrtime.bigint();
  let records = 0;
  for await (const _ of createReadStream(file).pipe(parse({ bom: true }))) records++;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { seconds, rowsPerSecond: (records - 1) / seconds, records: records - 1 };
}

/** A value in COPY's text format (backslash, tab, newline and carriage return escaped). */
const copyText = (v: string) => (/[\\\t\n\r]/.test(v) ? v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n').replace(/\r/g, '\\r') : v);

/**
 * The durable floor (context for the ratio, not the target's floor): the
 * least a durable import does, in this process: csv-parse reads the file,
 * each record becomes a text COPY line (its position, href, and its two
 * metadata columns as a JSON object), 10,000 rows per COPY (as the
 * service), into a table with a primary key only, in one transaction,
 * committed. No validation, document references, list indexes, trigger
 * or worker thread.
 */
async function durableFloor(file: string): Promise<{ seconds: number; rowsPerSecond: number; pgCpuSeconds: number; nodeCpuSeconds: number }> {
  const schema = `bench_csv_durable_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
  const db = new pg.Client({ connectionString: `${DATABASE_URL}?application_name=${schema}` });
  const monitor = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  await monitor.connect();
  const table = `"${schema}".items`;
  await db.query(`CREATE SCHEMA "${schema}"; CREATE TABLE ${table} (position int PRIMARY KEY, href text NOT NULL, metadata jsonb NOT NULL)`);
  try {
    const backends = await new BackendCpu(monitor, schema).start();
    const node0 = procCpuSeconds(process.pid) ?? NaN;
    const start = process.hrtime.bigint();
    await db.query('BEGIN');
    let position = 0;
    let lines: string[] = [];
    // one COPY in flight while the next chunk is parsed
    let inFlight: Promise<number> = Promise.resolve(0);
    const send = async () => {
      const data = lines.join('');
      lines = [];
      await inFlight;
      inFlight = copyIn(db, `COPY ${table} (position, href, metadata) FROM STDIN`, data);
    };
    let header = true;
    for await (const record of createReadStream(file).pipe(parse({ bom: true })) as AsyncIterable<string[]>) {
      if (header) {
        header = false;
        continue;
      }
      const [href = '', name = '', copies = ''] = record;
      lines.push(`${position++}\t${copyText(href)}\t${copyText(JSON.stringify({ name, copies }))}\n`);
      if (lines.length === 10_000) await send();
    }
    if (lines.length > 0) await send();
    await inFlight;
    await db.query('COMMIT');
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const nodeCpuSeconds = (procCpuSeconds(process.pid) ?? NaN) - node0;
    const pgCpuSeconds = await backends.stop();
    const { rows: counted } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`);
    if (counted[0]!.n !== rows) throw new Error(`durable floor: ${counted[0]!.n} rows, expected ${rows}`);
    return { seconds, rowsPerSecond: rows / seconds, pgCpuSeconds, nodeCpuSeconds };
  } finally {
    await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await db.end();
    await monitor.end();
  }
}

/** A server child whose CONFIG raises `lists.maxItems` to fit the file (the child inherits the environment). */
async function startServer(compiledDir: string | undefined, nodeArgs: string[]) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-csv-'));
  const file = path.join(dir, 'config.json');
  writeFileSync(file, JSON.stringify({ lists: { maxItems: rows + 1 } }));
  process.env.CONFIG = file;
  try {
    return await spawnServer('bench/server.ts', ['--log-level', 'warn'], nodeArgs, { compiledDir, timeoutMs: 120_000 });
  } finally {
    delete process.env.CONFIG;
    rmSync(dir, { recursive: true, force: true });
  }
}

function postFile(url: string, token: string, file: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, {
      method: 'POST', agent: false,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv', 'content-length': statSync(file).size },
    }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    createReadStream(file).pipe(req);
  });
}

/**
 * CPU of the server's PostgreSQL backends over the run: the backends are
 * looked up (application_name = the schema) before, every 250 ms during and
 * after the run, each one's CPU read from /proc at every look; a backend
 * that existed before counts from its CPU then, a new one from zero, one
 * that ended counts up to its last reading.
 */
class BackendCpu {
  private readonly seen = new Map<number, { base: number; last: number }>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> = Promise.resolve();
  constructor(private readonly db: pg.Client, private readonly appName: string) {}
  private async poll(first: boolean): Promise<void> {
    const { rows } = await this.db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [this.appName]);
    for (const { pid } of rows) {
      const now = procCpuSeconds(pid);
      if (now === undefined) continue;
      const entry = this.seen.get(pid);
      if (entry) entry.last = now;
      else this.seen.set(pid, { base: first ? now : 0, last: now });
    }
    for (const [pid, entry] of this.seen) {
      const now = procCpuSeconds(pid);
      if (now !== undefined) entry.last = now;
    }
  }
  async start(): Promise<this> {
    await this.poll(true);
    this.timer = setInterval(() => {
      this.polling = this.polling.then(() => this.poll(false)).catch(() => undefined);
    }, 250);
    return this;
  }
  async stop(): Promise<number> {
    clearInterval(this.timer);
    await this.polling;
    await this.poll(false);
    let total = 0;
    for (const { base, last } of this.seen.values()) total += last - base;
    return total;
  }
}

async function service(file: string, compiledDir: string | undefined) {
  const nodeArgs = args['profile-dir'] ? ['--cpu-prof', `--cpu-prof-dir=${args['profile-dir']}`] : [];
  const server = await startServer(compiledDir, nodeArgs);
  const { url, token, schema, pid } = server.info as { url: string; token: string; schema: string; pid: number };
  const db = new pg.Client({ connectionString: DATABASE_URL });
  await db.connect();
  try {
    const before = procMemory(pid)!;
    const sampler = new RssSampler(pid, 50).start();
    const backends = await new BackendCpu(db, schema).start();
    const node0 = procCpuSeconds(pid) ?? NaN;
    const threads0 = threadCpuSeconds(pid);
    const cpu0 = machineCpu();
    const start = process.hrtime.bigint();
    const res = await postFile(target === 'tasks' ? `${url}/v1/services/demo/tasks` : `${url}/v1/lists`, token, file);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const cpu1 = machineCpu();
    const nodeSeconds = (procCpuSeconds(pid) ?? NaN) - node0;
    // per thread: the main thread (tid = pid) and the busiest other one (the CSV import thread when there is one)
    const threadDeltas = [...threadCpuSeconds(pid)].map(([tid, s]) => [tid, s - (threads0.get(tid) ?? 0)] as const);
    const mainThreadSeconds = threadDeltas.find(([tid]) => tid === pid)?.[1] ?? NaN;
    const busiestOtherSeconds = Math.max(0, ...threadDeltas.filter(([tid]) => tid !== pid).map(([, s]) => s));
    const pgSeconds = await backends.stop();
    sampler.stop();
    const after = procMemory(pid)!;
    if (res.status !== 200) throw new Error(`POST answered ${res.status}: ${res.body.slice(0, 500)}`);
    const { rows: counted } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".list_items`);
    if (counted[0]!.n !== rows) throw new Error(`expected ${rows} items in the database, found ${counted[0]!.n}`);
    // a diagnostic that does not swing with load: what the import left on disk, the table and each of its indexes
    const { rows: sizes } = await db.query<{ name: string; bytes: number }>(
      `SELECT c.relname AS name, pg_relation_size(c.oid)::float8 AS bytes FROM pg_class c
       WHERE c.oid = $1::regclass OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = $1::regclass) ORDER BY c.oid`,
      [`"${schema}".list_items`]);
    return {
      seconds, rowsPerSecond: rows / seconds, items: counted[0]!.n,
      rssBeforeMiB: before.rss / MiB, rssPeakMiB: Math.max(sampler.peak, after.rss) / MiB, rssAfterMiB: after.rss / MiB, hwmMiB: after.hwm / MiB,
      rssSamples: sampler.samples, busyCores: busyCores(cpu0, cpu1),
      // CPU seconds over the run and per 1,000 rows: the server's node process and its PostgreSQL backends
      nodeCpuSeconds: nodeSeconds, pgCpuSeconds: pgSeconds,
      nodeCpuMsPer1kRows: (nodeSeconds * 1e6) / rows, pgCpuMsPer1kRows: (pgSeconds * 1e6) / rows,
      mainThreadCpuMsPer1kRows: (mainThreadSeconds * 1e6) / rows, busiestOtherThreadCpuMsPer1kRows: (busiestOtherSeconds * 1e6) / rows,
      relationMiB: Object.fromEntries(sizes.map((r) => [r.name, r.bytes / MiB])),
    };
  } finally {
    await db.end();
    await server.stop();
  }
}

const dir = mkdtempSync(path.join(os.tmpdir(), 'wcr-bench-csv-file-'));
const file = path.join(dir, 'rows.csv');
const load0 = os.loadavg();
let compiled: Awaited<ReturnType<typeof compileServers>> | undefined;
try {
  await writeCsv(file, rows);
  const sizeMiB = statSync(file).size / MiB;
  compiled = mode === 'compiled' ? await compileServers() : undefined;
  const floor = await parserAlone(file);
  if (floor.records !== rows) throw new Error(`csv-parse read ${floor.records} rows, expected ${rows}`);
  const ours = await service(file, compiled?.dir);
  const durable = args.durable === 'off' ? undefined : await durableFloor(file);
  const ratio = ours.rowsPerSecond / floor.rowsPerSecond;
  printTable(['what', 'seconds', 'rows/s', 'peak RSS MiB'], [
    [`csv-parse alone, ${rows} rows (${fmt(sizeMiB, 0)} MiB)`, fmt(floor.seconds, 2), fmt(floor.rowsPerSecond, 0), '-'],
    [`service: one ${target === 'tasks' ? 'task' : 'list'} (POST text/csv, ${mode})`, fmt(ours.seconds, 2), fmt(ours.rowsPerSecond, 0), fmt(ours.rssPeakMiB, 0)],
  ]);
  console.log(`ratio service / csv-parse: ${fmt(ratio, 2)} (target >= 0.5: ${ratio >= 0.5 ? 'met' : 'NOT MET'}); server peak RSS ${fmt(ours.rssPeakMiB, 0)} MiB (VmHWM ${fmt(ours.hwmMiB, 0)} MiB; target < 300: ${ours.rssPeakMiB < 300 ? 'met' : 'NOT MET'})`);
  console.log(`CPU per 1,000 rows: server node ${fmt(ours.nodeCpuMsPer1kRows, 2)} ms, PostgreSQL backends ${fmt(ours.pgCpuMsPer1kRows, 2)} ms (${fmt(ours.nodeCpuSeconds, 2)} s / ${fmt(ours.pgCpuSeconds, 2)} s); machine busy ${fmt(ours.busyCores, 2)} cores; load average ${os.loadavg().map((l) => fmt(l, 2)).join(' ')}`);
  console.log(`node threads per 1,000 rows: main ${fmt(ours.mainThreadCpuMsPer1kRows, 2)} ms, busiest other thread ${fmt(ours.busiestOtherThreadCpuMsPer1kRows, 2)} ms, the rest ${fmt(ours.nodeCpuMsPer1kRows - ours.mainThreadCpuMsPer1kRows - ours.busiestOtherThreadCpuMsPer1kRows, 2)} ms`);
  if (durable) {
    console.log(`durable floor (csv-parse into a table with a primary key only by COPY, one transaction; context, not the target): ${fmt(durable.seconds, 2)} s, ${fmt(durable.rowsPerSecond, 0)} rows/s (${fmt(durable.rowsPerSecond / floor.rowsPerSecond, 2)} x csv-parse); service / durable floor: ${fmt(ours.rowsPerSecond / durable.rowsPerSecond, 2)}; its CPU per 1,000 rows: node ${fmt((durable.nodeCpuSeconds * 1e6) / rows, 2)} ms, PostgreSQL ${fmt((durable.pgCpuSeconds * 1e6) / rows, 2)} ms`);
  }
  console.log(`on disk after the import (MiB): ${Object.entries(ours.relationMiB).map(([k, v]) => `${k} ${fmt(v, 1)}`).join(', ')}`);
  const figures = { bench: 'csv-import', rows, target, server: mode, sizeMiB, floor, service: ours, ratio, durable, loadavgBefore: load0, loadavgAfter: os.loadavg() };
  console.log(JSON.stringify(figures));
  writeResult('csv-import', args, {
    figures,
    floors: { 'csv-parse rows/s': floor.rowsPerSecond, 'durable floor rows/s (context)': durable?.rowsPerSecond ?? NaN },
    ratios: { 'service / csv-parse': ratio, 'service / durable floor': durable ? ours.rowsPerSecond / durable.rowsPerSecond : NaN },
    targets: [
      { name: 'service / csv-parse (rows/s)', value: ratio, target: '>= 0.5', met: ratio >= 0.5 },
      { name: 'server peak RSS, MiB', value: ours.rssPeakMiB, target: '< 300 MiB', met: ours.rssPeakMiB < 300 },
    ],
  });
} finally {
  compiled?.cleanup();
  rmSync(dir, { recursive: true, force: true });
}
