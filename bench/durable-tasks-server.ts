/**
 * The tasks benchmark's durable floor (bench/tasks.ts, the target's floor:
 * the service >= 0.9 x its rate): the least a service needs to start a task
 * over HTTP durably and run it through BullMQ, with no authentication,
 * logging, metrics, validation library, item rows or outbox.
 *
 * - `POST /tasks/:id/start`: one autocommitted UPDATE moves the task's row
 *   from `created` to `processing` (synchronous commit: the start survives a
 *   crash once answered), then `queue.add` with the task's id as the job id;
 *   204, or 409 when the row was not `created`. (Not atomic: a crash between
 *   the commit and the add loses the job, which the project's outbox does
 *   not.)
 * - a BullMQ `Worker` (`--concurrency`, 16 by default: the project's tasks
 *   queue's slots in config/default.yaml; bench/tasks.ts --concurrency n
 *   sets both) whose processor moves the row to `completed` in one
 *   autocommitted UPDATE guarded by `processing` (the item's effect recorded
 *   once).
 *
 * Creates its own schema with `--tasks` rows (`created`) and its own Redis
 * prefix; prints one JSON line `{"bench":"durable-tasks","url","pid",
 * "schema"}`; drops both and exits on SIGTERM/SIGINT or when stdin closes.
 *
 * `--store none` is the HTTP floor: no database at all. The start route only
 * calls `queue.add` and answers 204, the processor only counts the job, and
 * `GET /completed` answers `{ "completed": n }`: what an HTTP start and a
 * BullMQ job cost on the machine, with nothing durable.
 *
 * Run: node --import tsx bench/durable-tasks-server.ts --tasks 2000 --concurrency 16 [--store postgres|none]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import Router from '@koa/router';
import { Queue, Worker } from 'bullmq';
import Koa from 'koa';
import pg from 'pg';
import { dropRedisPrefix, exitOnStop } from './lib.js';

const { values: args } = parseArgs({
  options: {
    tasks: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    database: { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/test' },
    redis: { type: 'string', default: 'redis://127.0.0.1:6379' },
    store: { type: 'string', default: 'postgres' },
  },
});
if (args.store !== 'postgres' && args.store !== 'none') throw new Error('--store: postgres or none');
const durable = args.store === 'postgres';
const schema = `bench_durable_tasks_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
const table = `"${schema}".tasks`;
const admin = new pg.Client({ connectionString: args.database });
if (durable) {
  await admin.connect();
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.query(`CREATE TABLE ${table} (id int PRIMARY KEY, status text NOT NULL, modified timestamptz NOT NULL DEFAULT now())`);
  await admin.query(`INSERT INTO ${table} (id, status) SELECT g, 'created' FROM generate_series(0, $1::int - 1) g`, [Number(args.tasks)]);
  await admin.query(`ANALYZE ${table}`);
}

const pool = new pg.Pool({ connectionString: `${args.database}?application_name=${schema}`, max: 20 });
const connection = { url: args.redis, maxRetriesPerRequest: null };
const queue = new Queue('durable-tasks', { connection, prefix: schema, defaultJobOptions: { removeOnComplete: true, attempts: 5 } });
let completed = 0;
const worker = new Worker('durable-tasks', async (job) => {
  if (durable) await pool.query(`UPDATE ${table} SET status = 'completed', modified = now() WHERE id = $1 AND status = 'processing'`, [(job.data as { id: number }).id]);
  completed += 1;
}, { connection, prefix: schema, concurrency: Number(args.concurrency) });
await worker.waitUntilReady();

const app = new Koa();
const router = new Router();
router.post('/tasks/:id/start', async (ctx) => {
  const id = Number(ctx.params.id);
  if (!Number.isInteger(id)) ctx.throw(400);
  if (durable) {
    const { rowCount } = await pool.query(`UPDATE ${table} SET status = 'processing', modified = now() WHERE id = $1 AND status = 'created'`, [id]);
    if (rowCount !== 1) ctx.throw(409);
  }
  await queue.add('run', { id }, { jobId: `task-${id}` });
  ctx.status = 204;
});
router.get('/completed', (ctx) => {
  ctx.body = { completed };
});
app.use(router.routes());
app.use(router.allowedMethods());
const server = http.createServer({ keepAliveTimeout: 65_000 }, app.callback());
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

exitOnStop('durable-tasks-server', async () => {
  server.closeAllConnections();
  server.close();
  await worker.close();
  await queue.obliterate({ force: true }).catch(() => undefined);
  await queue.close();
  await pool.end();
  if (durable) {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
  }
  await dropRedisPrefix(args.redis!, schema);
});

process.stdout.write(`${JSON.stringify({ bench: 'durable-tasks', url: `http://127.0.0.1:${port}`, pid: process.pid, schema })}\n`);
