/**
 * The durable floor of bench/print-cups.ts: the least a print server needs to
 * take a job over HTTP and hand it to a raw-socket printer at most once, with
 * the project's guarantees and none of its rules (no authentication,
 * logging, printer states, priorities, flows, job log, outbox or BullMQ).
 *
 * - `POST /jobs?printer=<n>` (the body is the document): one autocommitted
 *   INSERT of the job with its bytes (synchronous commit: the job survives a
 *   crash once answered), 201 `{ id }`, and the printer's loop is woken.
 * - one loop per printer, one job in flight: the hand-off is one
 *   autocommitted UPDATE (`waiting` -> `sent`, synchronous: committed before
 *   the first byte goes out, so a crash leaves it marked, never sent twice)
 *   returning the bytes; one TCP connection to the sink carries them and is
 *   closed; once the sink has closed its side (the acknowledgement) one
 *   UPDATE marks it `done`, committed asynchronously (as the project's
 *   outcomes: a lost outcome leaves the mark).
 *
 * Jobs go to `--sinks` ports in the order of `printer` (0-based). Creates its
 * own schema; prints one JSON line `{"bench":"durable-print","url","pid",
 * "schema"}`; drops the schema and exits on SIGTERM/SIGINT or when stdin
 * closes.
 *
 * Run: node --import tsx bench/durable-print-floor.ts --sinks 40001,40002
 */
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import Router from '@koa/router';
import Koa from 'koa';
import pg from 'pg';
import { exitOnStop } from './lib.js';

const { values: args } = parseArgs({
  options: {
    sinks: { type: 'string' },
    database: { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/test' },
  },
});
const ports = (args.sinks ?? '').split(',').filter(Boolean).map(Number);
if (ports.length === 0 || ports.some((p) => !Number.isInteger(p))) throw new Error('--sinks: comma-separated ports');
const schema = `bench_durable_print_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 6)}`;
const table = `"${schema}".jobs`;
const admin = new pg.Client({ connectionString: args.database });
await admin.connect();
await admin.query(`CREATE SCHEMA "${schema}"`);
await admin.query(`CREATE TABLE ${table} (id bigserial PRIMARY KEY, printer int NOT NULL, state text NOT NULL DEFAULT 'waiting', body bytea NOT NULL)`);
await admin.query(`CREATE INDEX ON ${table} (printer, id) WHERE state = 'waiting'`);

const url = `${args.database}?application_name=${schema}`;
const pool = new pg.Pool({ connectionString: url, max: 20 });
// outcomes only: a lost one leaves the job marked `sent`, never sent twice
const outcomes = new pg.Pool({ connectionString: url, max: 4, options: '-c synchronous_commit=off' });

/** Sends the bytes on one connection and resolves once the printer closed its side. */
const deliver = (port: number, body: Buffer) => new Promise<void>((resolve, reject) => {
  const s = net.connect({ host: '127.0.0.1', port }, () => s.end(body));
  s.on('error', reject);
  s.on('data', () => {});
  s.on('close', () => resolve());
});

const loops = ports.map(() => ({ running: false, again: false }));
async function drain(printer: number): Promise<void> {
  const loop = loops[printer]!;
  loop.again = true;
  if (loop.running) return;
  loop.running = true;
  try {
    while (loop.again) {
      loop.again = false;
      for (;;) {
        const { rows } = await pool.query<{ id: string; body: Buffer }>(
          `UPDATE ${table} SET state = 'sent' WHERE id = (SELECT id FROM ${table} WHERE printer = $1 AND state = 'waiting' ORDER BY id LIMIT 1) RETURNING id, body`, [printer]);
        const job = rows[0];
        if (!job) break;
        await deliver(ports[printer]!, job.body);
        await outcomes.query(`UPDATE ${table} SET state = 'done' WHERE id = $1 AND state = 'sent'`, [job.id]);
      }
    }
  } finally {
    loop.running = false;
  }
}

const app = new Koa();
const router = new Router();
router.post('/jobs', async (ctx) => {
  const printer = Number(ctx.query.printer);
  if (!Number.isInteger(printer) || printer < 0 || printer >= ports.length) ctx.throw(400);
  const chunks: Buffer[] = [];
  for await (const c of ctx.req) chunks.push(c as Buffer);
  const { rows } = await pool.query<{ id: string }>(`INSERT INTO ${table} (printer, body) VALUES ($1, $2) RETURNING id`, [printer, Buffer.concat(chunks)]);
  ctx.status = 201;
  ctx.body = { id: Number(rows[0]!.id) };
  void drain(printer).catch((err: unknown) => console.error('durable-print-floor: delivery failed', err));
});
app.use(router.routes());
const server = http.createServer({ keepAliveTimeout: 65_000 }, app.callback());
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

exitOnStop('durable-print-floor', async () => {
  server.closeAllConnections();
  server.close();
  await pool.end();
  await outcomes.end();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

process.stdout.write(`${JSON.stringify({ bench: 'durable-print', url: `http://127.0.0.1:${port}`, pid: process.pid, schema })}\n`);
