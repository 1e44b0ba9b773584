import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DevIssuer } from '../../../../src/auth/dev-issuer.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../../helpers/env.js';
import { killAll, startProcess, waitLog, waitReady, type TestProcess } from '../../../helpers/process.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpProxy } from '../../../helpers/tcp-proxy.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { addPrinter, FAST, jobs, submit, until } from './harness.js';

/**
 * Faults with real processes under print load (issue 20, items 10-13): an
 * `api` and a `worker` process reach PostgreSQL and Redis through proxies
 * the test cuts (the shared servers keep running); ten raw-socket printers
 * (TCP sinks that take 20 ms to acknowledge) record every body, each body
 * names its job.
 * - Four PostgreSQL outages of 20 s while jobs keep arriving (item 10, 12):
 *   within a minute of the last one every printer prints again; nothing is
 *   abandoned, no job ends in error, none reaches a printer twice.
 * - Redis away (item 13): `/readyz` answers 200 and a submission through
 *   the API is taken; it prints once Redis is back.
 * - SIGTERM of the worker with a backlog of 3,000 jobs on the ten printers
 *   (item 11): it exits 0; no job ends "delivery uncertain"; the next
 *   worker prints the rest, each job once.
 * Item 14 (a paused lease holder writes nothing after the takeover) is
 * `test/connectors/lifecycle/single-instance.test.ts`, with real processes.
 * Defaults where the items are about them: `queues.maxRecreations` (3), the
 * reconcile interval (60 s), the lock duration.
 */
const PRINTERS = 10;
const OUTAGES = 4;
const OUTAGE_MS = 20_000;
let submitter: TestRuntime;
let pgProxy: TcpProxy;
let redisProxy: TcpProxy;
let config: string;
let api: TestProcess;
let worker: TestProcess;
const sinks: TcpSink[] = [];
const names = Array.from({ length: PRINTERS }, (_, i) => `fault-${i}`);

beforeAll(async () => {
  submitter = await startTestRuntime({ parts: { api: false, workers: false } });
  pgProxy = await TcpProxy.start(TEST_DATABASE_URL);
  redisProxy = await TcpProxy.start(TEST_REDIS_URL);
  config = path.join(submitter.dataDir, 'faults.yaml');
  await writeFile(config, JSON.stringify({
    database: { url: pgProxy.url(TEST_DATABASE_URL), schema: submitter.schema },
    redis: { url: redisProxy.url(TEST_REDIS_URL), prefix: submitter.prefix },
    printDispatch: FAST,
    server: { shutdownTimeoutMs: 20_000 },
  }));
  for (const n of names) {
    const s = await TcpSink.start({ ackDelayMs: 20 });
    sinks.push(s);
    await addPrinter(submitter, n, s.connection);
  }
  const env = { DATA_DIR: submitter.dataDir, CONFIG: config };
  api = await startProcess('api', env);
  await waitReady(api.url!);
  worker = await startProcess('worker', env);
  await waitLog(worker, /workers running/, 60_000);
}, 180_000);

afterAll(async () => {
  killAll();
  await pgProxy?.close();
  await redisProxy?.close();
  await submitter?.close();
  for (const s of sinks) await s.close();
});

/** How often each body reached a printer (all connections, acknowledged or not). */
function deliveries(): Map<string, number> {
  const seen = new Map<string, number>();
  for (const s of sinks) {
    for (const c of s.connections) {
      const body = Buffer.concat(c.chunks).toString();
      if (body) seen.set(body, (seen.get(body) ?? 0) + 1);
    }
  }
  return seen;
}
const twice = () => [...deliveries()].filter(([, n]) => n > 1).map(([b]) => b);
const workerErrors = (p: TestProcess) => p.logs.filter((l) => /abandon|"level":(5|6)0|unhandled|uncaught/i.test(l));
/** What the printers and the worker were doing, for a failure's message. */
async function diagnosis(): Promise<string> {
  const { rows } = await submitter.services.db.query<{ printer: string; status: string; n: number }>(
    'SELECT printer, status, count(*)::int AS n FROM print_jobs GROUP BY 1, 2 ORDER BY 1, 2');
  const printers = await submitter.services.db.query('SELECT name, error FROM printers ORDER BY name');
  return [JSON.stringify(rows), JSON.stringify(printers.rows), ...worker.logs.slice(-40)].join('\n');
}
const ids: string[] = [];
let seq = 0;
const submitTo = async (printer: string, tag = 'job') => {
  const body = `${printer} ${tag} ${seq++}\n`;
  ids.push((await submit(submitter, printer, body)).id);
  return body;
};

it('fault: Redis away: /readyz 200 (Redis in its checks), a submission through the API is taken and prints once Redis is back', async () => {
  const issuer = await DevIssuer.open(submitter.dataDir, `${api.url}/dev-issuer`);
  const token = await issuer.mint({ user: 'alice', roles: ['admin'] });
  await redisProxy.cut();
  try {
    const ready = await fetch(`${api.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(JSON.stringify(await ready.json())).toMatch(/redis/i);
    const res = await fetch(`${api.url}/v3/jobs/?printer=fault-0&name=while-redis-away`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'text/plain' }, body: 'fault-0 while redis away\n',
    });
    expect(res.status).toBe(201);
    ids.push(String(((await res.json()) as { id: number }).id));
  } finally {
    await redisProxy.restore();
  }
  await eventually(async () => (deliveries().get('fault-0 while redis away\n') ? true : undefined), 90_000, 100);
}, 180_000);

it(`fault: ${OUTAGES} PostgreSQL outages of ${OUTAGE_MS / 1000} s under print load: every printer prints again within a minute of the last, nothing abandoned, no error, none twice`, async () => {
  for (const n of names) for (let i = 0; i < 20; i++) await submitTo(n);
  // load all along: a job every 100 ms to some printer (the submitter reaches PostgreSQL directly)
  let loading = true;
  const load = (async () => {
    while (loading) {
      await submitTo(names[seq % PRINTERS]!);
      await sleep(100);
    }
  })();
  let lastBack = 0;
  try {
    for (let o = 0; o < OUTAGES; o++) {
      await sleep(5000);
      await pgProxy.cut();
      await sleep(OUTAGE_MS);
      await pgProxy.restore();
      lastBack = Date.now();
    }
  } finally {
    loading = false;
    await load;
    await pgProxy.restore();
  }
  // each printer prints a job submitted after the last outage within a minute of it
  const after = await Promise.all(names.map((n) => submitTo(n, 'after')));
  await eventually(async () => (after.every((b) => deliveries().has(b)) ? true : undefined), 60_000 - (Date.now() - lastBack), 100)
    .catch(async (err: Error) => { throw new Error(`${err.message}\n${await diagnosis()}`); });
  const final = await until(submitter, ids, ['processed', 'error', 'canceled'], 180_000);
  const notProcessed = final.filter((j) => j.status !== 'processed');
  // what became of them: each one's log and the worker's lines about it and its printer
  const why = await Promise.all(notProcessed.slice(0, 3).map(async (j) => {
    const { rows } = await submitter.services.db.query<{ at: Date; text: string }>(
      'SELECT at, text FROM print_logs WHERE job_id = $1 ORDER BY id', [j.id]);
    return [`job ${j.id}:`, ...rows.map((r) => `  ${r.at.toISOString()} ${r.text}`),
      ...worker.logs.filter((l) => l.includes(`"${j.printer}"`) || l.includes(`.${j.printer}"`)).slice(-30)].join('\n');
  }));
  expect(notProcessed.map((j) => `${j.id} ${j.printer}: ${j.status} ${j.message}`), why.join('\n')).toEqual([]);
  expect(twice()).toEqual([]);
  expect(workerErrors(worker)).toEqual([]);
  expect(worker.child.exitCode).toBeNull();
}, 600_000);

it('fault: SIGTERM of the worker with 3,000 jobs waiting on ten printers: exit 0, no job "delivery uncertain", the next worker prints the rest, each once', async () => {
  const start = ids.length;
  for (let i = 0; i < 3000; i += 50) await Promise.all(Array.from({ length: 50 }, (_, k) => submitTo(names[(i + k) % PRINTERS]!, 'backlog')));
  const backlog = ids.slice(start);
  // every printer busy, most of the backlog still waiting
  const printedBefore = sinks.map((s) => s.jobs().length);
  await eventually(async () => (sinks.every((s, i) => s.jobs().length >= printedBefore[i]! + 3) ? true : undefined), 60_000, 20);
  worker.child.kill('SIGTERM');
  expect(await worker.exited).toBe(0);
  const stopped = await jobs(submitter, backlog);
  expect(stopped.filter((j) => j.status === 'error' || j.status === 'processing').map((j) => `${j.id}: ${j.status} ${j.message}`)).toEqual([]);
  expect(stopped.filter((j) => j.status === 'processed').length).toBeLessThan(backlog.length);
  worker = await startProcess('worker', { DATA_DIR: submitter.dataDir, CONFIG: config });
  await waitLog(worker, /workers running/, 60_000);
  const final = await until(submitter, backlog, ['processed', 'error', 'canceled'], 300_000);
  expect(final.filter((j) => j.status !== 'processed').map((j) => `${j.id}: ${j.status} ${j.message}`)).toEqual([]);
  expect(twice()).toEqual([]);
  expect(workerErrors(worker)).toEqual([]);
}, 600_000);
