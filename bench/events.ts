/**
 * Status polling and event latency benchmark (docs/benchmarks.md, issue 23).
 *
 *   npm run bench:events -- [--duration 10] [--connections 100] [--clients 1000] [--events 200] [--interval 50]
 *
 * One run, one machine, three servers as child processes:
 *
 * - the project (bench/server.ts --workers 1: an `api` process and one
 *   `worker` process on PostgreSQL and the local Redis);
 * - the floor, bench/bare-server.ts: Koa + @koa/router answering a small
 *   precomputed task-shaped object (`GET /v1/status`), no auth, no database;
 *   and in the same process the durable floor, `GET /v1/status-db/{tid}`:
 *   the same object read from PostgreSQL by primary key per request (a pool
 *   of 10), i.e. the least a route that answers the committed state does.
 *
 * **Polling**: autocannon in this process, `--connections` keep-alive
 * connections for `--duration` s (after a 2 s warm-up) against the floor, then
 * `GET /v1/services/store/repo/command/{cid}` (a command held `running`) and
 * `GET /v1/services/demo/tasks/{tid}` (an idle task) of the project: requests/s
 * and p99 latency, ratio to each floor. Target: each >= 0.40 x the floor's
 * req/s (the ratio to the durable floor is printed beside it).
 *
 * **Events**: `--clients` SSE clients (`GET /v1/events`, an admin's token, so
 * every client receives every task event) connect to the API process; then
 * `--events` one-item tasks of the `demo` service are started one per
 * `--interval` ms. Each task's `processing -> completed` change happens in the
 * worker process; a trigger the benchmark adds stamps `clock_timestamp()` on
 * that change (inside the worker's statement, before its commit: the latency
 * includes the commit). Latency = the moment each client parsed the event
 * (same machine clock) minus the stamp, over every (event, client) pair:
 * p50, p99, max. Target: p99 < 100 ms. The clients run in this process too,
 * so their own parsing is inside the figure.
 *
 * Prints a table and one JSON line, and writes the result file (bench/results/).
 */
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import pg from 'pg';
import { fmt, jsonCall, printTable, spawnServer, writeResult, type TargetResult } from './lib.js';

const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/test';

const { values: args } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '100' },
    clients: { type: 'string', default: '1000' },
    events: { type: 'string', default: '200' },
    interval: { type: 'string', default: '50' },
    /** Write V8 CPU profiles of the project's processes into this directory (`bench/profile.ts` summarizes one). */
    'profile-dir': { type: 'string' },
  },
  strict: true,
});
const duration = Number(args.duration);
const connections = Number(args.connections);
const clientCount = Number(args.clients);
const eventCount = Number(args.events);
const interval = Number(args.interval);

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const now = () => performance.timeOrigin + performance.now();

async function cannon(url: string, headers: Record<string, string>): Promise<Result> {
  await autocannon({ url, connections, duration: 2, headers, timeout: 30 });
  return autocannon({ url, connections, duration, headers, timeout: 30 });
}

// the durable floor's own schema (bench/bare-server.ts drops it when it stops)
const floorSchema = `bench_events_floor_${process.pid}`;
const bare = await spawnServer('bench/bare-server.ts', [], [], { env: { BARE_DB_URL: DATABASE_URL, BARE_DB_SCHEMA: floorSchema } });
const project = await spawnServer('bench/server.ts', ['--workers', '1', '--log-level', 'warn'], args['profile-dir'] ? ['--cpu-prof', '--cpu-prof-dir', args['profile-dir']] : [], { timeoutMs: 180_000 });
const { url, token, schema } = project.info as { url: string; token: string; schema: string };
const db = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path="${schema}"` });
await db.connect();
const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });
const auth = { authorization: `Bearer ${token}` };

try {
  // ---- polling ----
  // a command that stays `running` while it is polled: the row is locked by a transaction of the benchmark, so the
  // reconciler's run of it waits (a status read takes no lock, so polling does not)
  const cid = '0190a0b0-0000-7000-8000-000000000001';
  await db.query(`INSERT INTO commands (cid, sid, command, state, creator, expires) VALUES ($1, 'store', 'copy', 'running', 'bench', now() + interval '1 day')`, [cid]);
  const holder = new pg.Client({ connectionString: DATABASE_URL, options: `-c search_path="${schema}"` });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('SELECT 1 FROM commands WHERE cid = $1 FOR UPDATE', [cid]);
  const created = await jsonCall(agent, 'POST', `${url}/v1/services/demo/tasks`, token, { name: 'poll' });
  if (created.status !== 200) throw new Error(`task create: ${created.status}`);
  const tid = created.json.tid as string;
  const check = await jsonCall(agent, 'GET', `${url}/v1/services/store/repo/command/${cid}`, token);
  if (check.status !== 200) throw new Error(`command poll answers ${check.status}`);

  const floor = await cannon(`${bare.info.url}/v1/status`, {});
  const dbFloor = await cannon(`${bare.info.url}/v1/status-db/${bare.info.statusTid}`, {});
  const command = await cannon(`${url}/v1/services/store/repo/command/${cid}`, auth);
  const task = await cannon(`${url}/v1/services/demo/tasks/${tid}`, auth);
  await holder.query('ROLLBACK');
  await holder.end();
  for (const [name, r] of [['floor', floor], ['durable floor', dbFloor], ['command', command], ['task', task]] as const) {
    if (r.non2xx > 0 || r.errors > 0) throw new Error(`${name} polling: ${r.non2xx} non-2xx, ${r.errors} errors`);
  }

  // ---- events ----
  await db.query(`CREATE TABLE bench_stamps (tid uuid, at double precision)`);
  await db.query(`CREATE FUNCTION bench_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN INSERT INTO bench_stamps VALUES (NEW.tid, extract(epoch FROM clock_timestamp()) * 1000); RETURN NULL; END $$`);
  await db.query(`CREATE TRIGGER bench_stamp AFTER UPDATE OF status ON tasks FOR EACH ROW
    WHEN (NEW.status = 'completed' AND OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION bench_stamp()`);

  const received = new Map<string, number[]>();
  let connected = 0;
  const sseAgent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
  const streams: http.ClientRequest[] = [];
  await Promise.all(Array.from({ length: clientCount }, () => new Promise<void>((resolve, reject) => {
    const req = http.get(`${url}/v1/events?types=task.updated`, { agent: sseAgent, headers: { ...auth, accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`events: ${res.statusCode}`));
      connected++;
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (!line.startsWith('data:') || !line.includes('"completed"')) continue;
          const at = now();
          const d = JSON.parse(line.slice(5)) as { tid: string };
          let list = received.get(d.tid);
          if (!list) received.set(d.tid, (list = []));
          list.push(at);
        }
      });
      resolve();
    });
    req.on('error', reject);
    streams.push(req);
  })));

  const tids: string[] = [];
  for (let i = 0; i < eventCount; i++) {
    const r = await jsonCall(agent, 'POST', `${url}/v1/services/demo/tasks`, token, { name: `ev-${i}`, lists: { input: { embedded: { listItems: [{ href: 'https://example.com/a.pdf', metadata: { mock: { delayMs: 0 } } }] } } } });
    tids.push(r.json.tid as string);
  }
  const t0 = Date.now();
  for (const t of tids) {
    const r = await jsonCall(agent, 'POST', `${url}/v1/services/demo/tasks/${t}/action`, token, { action: 'start' });
    if (r.status !== 204) throw new Error(`start: ${r.status}`);
    await new Promise((resolve) => setTimeout(resolve, interval));
  }
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline && tids.some((t) => (received.get(t)?.length ?? 0) < clientCount)) await new Promise((resolve) => setTimeout(resolve, 100));
  const { rows: diag } = await db.query<{ completed: number; published: number; unpublished: number }>(
    `SELECT (SELECT count(*)::int FROM tasks WHERE status = 'completed') AS completed,
            (SELECT count(*)::int FROM events WHERE seq IS NOT NULL) AS published, (SELECT count(*)::int FROM events WHERE seq IS NULL) AS unpublished`);
  const { rows } = await db.query<{ tid: string; at: number }>('SELECT tid::text, at FROM bench_stamps');
  const stamps = new Map(rows.map((r) => [r.tid, Number(r.at)]));
  const latencies: number[] = [];
  let missing = 0;
  for (const t of tids) {
    const at = stamps.get(t);
    const got = received.get(t) ?? [];
    missing += clientCount - got.length;
    if (at !== undefined) for (const r of got) latencies.push(r - at);
  }
  latencies.sort((a, b) => a - b);
  for (const s of streams) s.destroy();

  const figures = {
    polling: {
      connections, duration,
      floor: { rps: floor.requests.average, p99: floor.latency.p99 },
      durableFloor: { rps: dbFloor.requests.average, p99: dbFloor.latency.p99 },
      command: { rps: command.requests.average, p99: command.latency.p99 },
      task: { rps: task.requests.average, p99: task.latency.p99 },
    },
    events: {
      clients: clientCount, connected, events: eventCount, intervalMs: interval, deliveries: latencies.length, missing,
      ...diag[0], p50: quantile(latencies, 0.5), p99: quantile(latencies, 0.99), max: latencies.at(-1) ?? NaN, wallMs: Date.now() - t0,
    },
  };
  const ratios = {
    command: command.requests.average / floor.requests.average, task: task.requests.average / floor.requests.average,
    commandDurable: command.requests.average / dbFloor.requests.average, taskDurable: task.requests.average / dbFloor.requests.average,
  };
  const fd = dbFloor.requests.average;
  printTable(['polling', 'req/s', 'p99 ms', 'x floor', 'x durable floor'], [
    ['bare Koa route (floor)', fmt(floor.requests.average, 0), floor.latency.p99, '1.00', fmt(floor.requests.average / fd, 2)],
    ['Koa + one pg row by key (durable floor)', fmt(fd, 0), dbFloor.latency.p99, fmt(fd / floor.requests.average, 2), '1.00'],
    ['GET .../repo/command/{cid}', fmt(command.requests.average, 0), command.latency.p99, fmt(ratios.command, 2), fmt(ratios.commandDurable, 2)],
    ['GET .../tasks/{tid}', fmt(task.requests.average, 0), task.latency.p99, fmt(ratios.task, 2), fmt(ratios.taskDurable, 2)],
  ]);
  printTable(['events', 'clients', 'deliveries', 'missing', 'p50 ms', 'p99 ms', 'max ms'], [
    ['task change in the worker -> SSE client', clientCount, latencies.length, missing, fmt(figures.events.p50), fmt(figures.events.p99), fmt(figures.events.max)],
  ]);
  const targets: TargetResult[] = [
    { name: 'command polling / bare Koa route (req/s)', value: ratios.command, target: '>= 0.4', met: ratios.command >= 0.4 },
    { name: 'task polling / bare Koa route (req/s)', value: ratios.task, target: '>= 0.4', met: ratios.task >= 0.4 },
    { name: `task change -> SSE event p99 at ${clientCount} clients (ms)`, value: figures.events.p99, target: '< 100 ms', met: figures.events.p99 < 100 && missing === 0 },
  ];
  console.log(JSON.stringify({ bench: 'events', ...figures, ratios, targets }));
  writeResult('events', args, { figures, floors: { 'bare Koa route req/s': floor.requests.average, 'Koa + one pg row by key req/s': fd }, ratios, targets });
} finally {
  await db.end().catch(() => {});
  agent.destroy();
  await project.stop();
  await bare.stop();
}
