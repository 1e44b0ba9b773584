/**
 * Floor for the listing benchmark: a bare Koa + @koa/router server, one route,
 * answering with a precomputed array of 100 objects shaped like the project's
 * repository entries (Koa serialises it per request, as the project's must).
 * No authentication, logging, metrics or database. Prints one JSON line
 * `{"bench":"bare","url","pid","bodyBytes"}` on stdout; exits on SIGTERM/SIGINT
 * or when stdin closes.
 *
 * With `BARE_DB_URL` and `BARE_DB_SCHEMA` in the environment it also answers
 * `GET /v1/status-db/{tid}` from PostgreSQL: one row read by primary key per
 * request (a `pg` pool of 10, as the project's default), in a schema of its
 * own that it creates at start and drops when it stops: the polling floor
 * with the project's guarantee (every answer is the committed state).
 *
 * Run: node --import tsx bench/bare-server.ts
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';
import pg from 'pg';

const parent = randomUUID();
const created = new Date().toISOString();
const entries = Array.from({ length: 100 }, (_, i) => {
  const uuid = randomUUID();
  const href = `/v1/services/store/repo/${uuid}`;
  return {
    uuid,
    name: `doc-${String(i + 1).padStart(6, '0')}`,
    type: 'document',
    metadata: {},
    creator: 'bench',
    owner: null,
    created,
    modified: created,
    size: null,
    mimeType: null,
    sha256: null,
    links: {
      self: { href },
      parent: { href: `/v1/services/store/repo/${parent}` },
      content: { href: `${href}/content` },
      preview: { href: `${href}/preview` },
    },
  };
});

// the print listing's floor (bench/print-listing.ts): 100 objects shaped like the print API's jobs
const jobs = Array.from({ length: 100 }, (_, i) => ({
  id: 100_000 - i, status: 'processed', printer: 'p7', user: 'bench', owner: null, name: `job-${i}`, fileName: `job-${i}.pdf`,
  mimeType: 'application/pdf', size: 1024, copies: 1, priority: 50, pages: null, checkin: { type: 'api' }, task: null, flow: null,
  redirectedFrom: null, message: null, created, updated: created, finished: created, keepTempfiles: false, stages: [],
  retention: { seconds: 86_400, custom: false, deleteAfter: created }, attempts: 0, nextAttempt: null,
}));

const app = new Koa();
const router = new Router();
router.get('/v1/services/:sid/repo/:uuid/children', (ctx) => {
  ctx.body = entries;
});
router.get('/v3/jobs/', (ctx) => {
  ctx.body = jobs;
});
// the status polling floor (bench/events.ts): one small object shaped like a task's answer
const status = {
  tid: parent, sid: 'demo', name: 'bench', type: null, status: 'processing', creator: 'bench', owner: null,
  created, modified: created, metadata: {}, href: `/v1/services/demo/tasks/${parent}`,
};
router.get('/v1/status', (ctx) => {
  ctx.body = status;
});
const dbUrl = process.env.BARE_DB_URL;
const dbSchema = process.env.BARE_DB_SCHEMA;
let pool: pg.Pool | undefined;
if (dbUrl && dbSchema) {
  if (!/^[a-z_][a-z0-9_]*$/.test(dbSchema)) throw new Error(`BARE_DB_SCHEMA: not a plain name: ${dbSchema}`);
  const setup = new pg.Client({ connectionString: dbUrl });
  await setup.connect();
  await setup.query(`CREATE SCHEMA "${dbSchema}"`);
  await setup.query(`CREATE TABLE "${dbSchema}".status (tid uuid PRIMARY KEY, body jsonb NOT NULL)`);
  await setup.query(`INSERT INTO "${dbSchema}".status VALUES ($1, $2)`, [parent, JSON.stringify(status)]);
  await setup.end();
  pool = new pg.Pool({ connectionString: dbUrl, max: 10, options: `-c search_path="${dbSchema}"` });
  router.get('/v1/status-db/:tid', async (ctx) => {
    const { rows } = await pool!.query<{ body: unknown }>('SELECT body FROM status WHERE tid = $1', [ctx.params.tid]);
    if (rows.length === 0) ctx.throw(404);
    ctx.body = rows[0]!.body;
  });
}
app.use(router.routes());
app.use(router.allowedMethods());

const server = http.createServer({ keepAliveTimeout: 65_000 }, app.callback());
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address() as AddressInfo;

/** Drops the floor's schema (when it made one); never throws. */
async function dropSchema(): Promise<void> {
  if (!pool || !dbUrl) return;
  await pool.end().catch(() => {});
  const c = new pg.Client({ connectionString: dbUrl });
  await c.connect().then(() => c.query(`DROP SCHEMA IF EXISTS "${dbSchema}" CASCADE`)).catch(() => {});
  await c.end().catch(() => {});
}

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  server.close(() => void dropSchema().finally(() => process.exit(0)));
  server.closeAllConnections();
  setTimeout(() => process.exit(0), 5000).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();

process.stdout.write(`${JSON.stringify({ bench: 'bare', url: `http://127.0.0.1:${port}`, pid: process.pid, bodyBytes: Buffer.byteLength(JSON.stringify(entries)), jobsBodyBytes: Buffer.byteLength(JSON.stringify(jobs)), statusTid: parent })}\n`);
