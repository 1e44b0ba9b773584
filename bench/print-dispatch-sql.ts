/**
 * The dispatch engine's SQL alone: PostgreSQL backend CPU and client CPU per
 * drained job, one connection, no devices, no Redis. Drains `--jobs` waiting
 * jobs over `--printers` printers with the engine's own statements
 * (`claimNext`, then `deliveredAndNext` until the printer is empty, or with
 * `--batch n` every printer in flight at once and `deliveredAndNextMany` over
 * n printers a statement, as OutcomeBatcher does under load), so what one
 * delivered job costs the database can be compared between variants of the
 * SQL without the noise of the whole benchmark. `--explain` prints the
 * generic plan of `deliveredAndNext` (EXPLAIN ANALYZE, rolled back) after
 * the first round; `--pause ms` waits before each timed drain (to attach
 * `perf record -p <backend pid>`; the pid is printed).
 *
 * A helper benchmark: no floor, no target (it compares variants). Prints a
 * line per round and one JSON line, and writes the result file
 * (bench/results/, lib.ts writeResult).
 *
 * Run: npx tsx bench/print-dispatch-sql.ts [--jobs 4000 --printers 20 --rounds 2 --batch 0 --explain]
 * Needs PostgreSQL (127.0.0.1:5432, db test).
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import type { PrintJobRow } from '../src/areas/print/jobs/store/job-row.js';
import { deliveredAndNext, deliveredAndNextMany } from '../src/areas/print/jobs/store/job-store.js';
import { claimNext, type NextStep } from '../src/areas/print/dispatch/claim.js';
import { createOutbox } from '../src/outbox/outbox.js';
import { openPostgres } from '../src/storage/driver/postgres.js';
import { migrate } from '../src/storage/migrate.js';
import { fmt, procCpuSeconds, writeResult } from './lib.js';
import { explainGenericPlan, lastStatement } from '../test/helpers/generic-plan.js';

const { values: args } = parseArgs({
  options: {
    jobs: { type: 'string', default: '4000' },
    printers: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '2' },
    // 0: deliveredAndNext per job; n: deliveredAndNextMany over up to n printers at a time
    batch: { type: 'string', default: '0' },
    explain: { type: 'boolean', default: false },
    pause: { type: 'string', default: '0' },
  },
});
const JOBS = Number(args.jobs);
const PRINTERS = Number(args.printers);
const DB_URL = 'postgresql://postgres@127.0.0.1:5432/test';
const tag = `bench_sql_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;

const db = await openPostgres({ url: DB_URL, schema: tag, poolSize: 1 });
const outbox = createOutbox();
/**
 * EXPLAIN ANALYZE of the generic plan of one outcome-and-next statement (one
 * printer, or with `batch` > 0 two printers in one statement), on one more
 * job per printer, rolled back.
 */
async function explain(batch: number): Promise<void> {
  const printers = batch > 0 ? ['p0', 'p1'] : ['p0'];
  const inFlight: PrintJobRow[] = [];
  for (const p of printers) {
    await db.query(`INSERT INTO print_jobs (status, printer, creator, name, mime_type, size, blob_sha256, priority)
      SELECT 'waitprocessing', $1, 'bench', 'x' || i, 'application/octet-stream', 1, md5(i::text) || md5(i::text), 10 FROM generate_series(1, 2) i`, [p]);
    const step = await db.transaction((tx) => claimNext(tx, outbox, p));
    if (step.kind !== 'deliver') throw new Error('nothing claimed');
    inFlight.push(step.job);
  }
  // the statement's text and parameters, caught on a transaction that is rolled back, then its generic plan run and explained
  const sent = await lastStatement(db, (sql) => (batch > 0
    ? deliveredAndNextMany(sql, inFlight.map((job) => ({ job, message: 'ok', touchPrinter: true })))
    : deliveredAndNext(sql, inFlight[0]!, 'ok', true)));
  console.log(await explainGenericPlan(db, sent, 'ANALYZE, BUFFERS'));
}

try {
  await migrate(db);
  const names = Array.from({ length: PRINTERS }, (_, i) => `p${i}`);
  for (const n of names) await db.query('INSERT INTO printers (name, connection) VALUES ($1, $2)', [n, 'socket://127.0.0.1:9']);
  const pid = (await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
  console.log(`backend pid ${pid}`);
  const rounds: { round: number; jobs: number; wallMsPerJob: number; pgCpuMsPerJob: number; clientCpuMsPerJob: number }[] = [];

  for (let round = 0; round < Number(args.rounds); round++) {
    await db.query(`INSERT INTO print_jobs (status, printer, creator, name, mime_type, size, blob_sha256, priority)
      SELECT 'waitprocessing', 'p' || (i % $2), 'bench', 'job ' || i, 'application/octet-stream', 4096, md5(i::text) || md5(i::text), (ARRAY[10, 50, 90])[1 + i % 3]
        FROM generate_series(1, $1) i`, [JOBS, PRINTERS]);
    await db.query(`INSERT INTO print_logs (job_id, printer, text) SELECT id, printer, 'submitted' FROM print_jobs WHERE status = 'waitprocessing'`);
    await db.exec('VACUUM ANALYZE print_jobs');
    await db.exec('VACUUM ANALYZE print_logs');
    if (Number(args.pause) > 0) await new Promise((r) => setTimeout(r, Number(args.pause)));
    const pg0 = procCpuSeconds(pid)!;
    const node0 = process.cpuUsage();
    const t0 = performance.now();
    let done = 0;
    const BATCH = Number(args.batch);
    if (BATCH === 0) {
      for (const name of names) {
        let step: NextStep = await db.transaction((tx) => claimNext(tx, outbox, name));
        while (step.kind === 'deliver') {
          const job: PrintJobRow = step.job;
          const { next } = await deliveredAndNext(db, job, 'ok', false);
          done++;
          if (!next) break;
          step = next;
        }
      }
    } else {
      // every printer in flight at once, their outcomes and next hand-offs BATCH printers to a statement
      let inFlight: PrintJobRow[] = [];
      for (const name of names) {
        const step = await db.transaction((tx) => claimNext(tx, outbox, name));
        if (step.kind === 'deliver') inFlight.push(step.job);
      }
      while (inFlight.length > 0) {
        const batch = inFlight.slice(0, BATCH);
        const results = await deliveredAndNextMany(db, batch.map((job) => ({ job, message: 'ok', touchPrinter: false })));
        done += results.filter((r) => r.delivered).length;
        inFlight = [...inFlight.slice(BATCH), ...results.flatMap((r) => (r.next?.kind === 'deliver' ? [r.next.job] : []))];
      }
    }
    const ms = performance.now() - t0;
    const node = process.cpuUsage(node0);
    const pgMs = (procCpuSeconds(pid)! - pg0) * 1000;
    console.log(`round ${round}: ${done} jobs, ${fmt(ms / done, 3)} ms/job wall, PG CPU ${fmt(pgMs / done, 3)} ms/job, client CPU ${fmt((node.user + node.system) / 1000 / done, 3)} ms/job`);
    rounds.push({ round, jobs: done, wallMsPerJob: ms / done, pgCpuMsPerJob: pgMs / done, clientCpuMsPerJob: (node.user + node.system) / 1000 / done });
    if (args.explain && round === 0) await explain(BATCH);
  }
  const figures = { bench: 'print-dispatch-sql', jobs: JOBS, printers: PRINTERS, batch: Number(args.batch), rounds };
  console.log(JSON.stringify(figures));
  writeResult('print-dispatch-sql', args, { figures, floors: {}, ratios: {}, targets: [] });
} finally {
  await db.close();
  const c = new pg.Client({ connectionString: DB_URL });
  await c.connect();
  await c.query(`DROP SCHEMA IF EXISTS "${tag}" CASCADE`);
  await c.end();
}
