import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { printPort } from '../../../src/runtime/print-port.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../helpers/env.js';
import { DevIssuer } from '../../../src/auth/dev-issuer.js';
import { killAll, startProcess, waitLog, waitReady } from '../../helpers/process.js';
import { dropQueues, eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { TcpSink } from '../../helpers/tcp-sink.js';
import type { TestClient } from '../../helpers/client.js';
import { act, getTask, itemWhen, jobsOf, printTask, storeDocument, taskWhen } from './helpers.js';

/**
 * One print job per task item and run, across a worker killed with SIGKILL
 * while it submits (issue 22, item 4): a real worker process runs a print
 * task of 40 documents and is killed as soon as its first jobs exist, so a
 * submission is committed without the item being handed off; the worker
 * that takes over runs those items again. Every item ends with exactly one
 * job, every document reached the printer once, the task completes.
 */
let api: TestRuntime;
let taker: TestRuntime | undefined;
let admin: TestClient;
let sink: TcpSink;
const QUEUES = { lockDurationMs: 2000, reconcileIntervalMs: 1000, taskItemsPerJob: 40, concurrency: { default: 2, tasks: 4, print: 8 } };

beforeAll(async () => {
  api = await startTestRuntime({ parts: { api: true, workers: false } });
  admin = api.client.withToken(await api.token('admin', ['admin']));
  sink = await TcpSink.start();
  expect((await admin.post('/v3/printers/', { name: 'crash printer', connection: sink.connection })).status).toBe(200);
});
afterAll(async () => {
  killAll();
  await taker?.close(false);
  await api?.close();
  await sink?.close();
});

/** A CONFIG file for a process of its own on this file's schema and queue prefix. */
async function processConfig(name: string): Promise<string> {
  const file = path.join(api.dataDir, name);
  await writeFile(file, JSON.stringify({
    database: { url: TEST_DATABASE_URL, schema: api.schema },
    redis: { url: TEST_REDIS_URL, prefix: api.prefix },
    queues: QUEUES,
    // the demo printer stays out of this schema
    services: { print: { options: { printers: [] } } },
  }));
  return file;
}

const countJobs = async (tid: string) => Number((await api.services.db.query<{ n: string }>(
  "SELECT count(*) AS n FROM print_jobs WHERE task->>'tid' = $1", [tid])).rows[0]!.n);

it('two deliveries of one item at once make one job (the unique key on the task reference)', async () => {
  const doc = await storeDocument(admin, 'twice.pdf', '%PDF-1.4 twice');
  const { tid, items } = await printTask(admin, 'twice', [{ href: doc }]);
  const port = printPort(() => api.services);
  const sub = { sid: 'print', tid, item: items[0]!, href: doc, printer: 'crash printer' };
  const [a, b] = await Promise.all([port.submitItem(sub), port.submitItem(sub)]);
  expect(a.id).toBe(b.id);
  expect(await countJobs(tid)).toBe(1);
  // and once more later (a retried job): the same job
  expect((await port.submitItem(sub)).id).toBe(a.id);
  expect(await countJobs(tid)).toBe(1);
});

it('kill -9 of the worker while it submits: one job per item, each document printed once, the task completes', async () => {
  const docs: string[] = [];
  for (let i = 0; i < 40; i++) docs.push(await storeDocument(admin, `doc-${i}.pdf`, `%PDF-1.4 document ${i}`));
  const { tid, items } = await printTask(admin, 'forty', docs.map((href) => ({ href, metadata: { printer: 'crash printer' } })));
  const config = await processConfig('print-worker.yaml');
  // the printer holds its queue while the worker is killed: the kill interrupts submissions, not a delivery
  // (a delivery cut by a kill ends "delivery uncertain", by design: test/areas/print/dispatch/dispatch-crash.test.ts)
  expect((await admin.put('/v3/printers/crash%20printer/pause')).status).toBe(200);
  const worker = await startProcess('worker', { DATA_DIR: api.dataDir, CONFIG: config });
  let window = 0;
  try {
    await waitLog(worker, /workers running/, 60_000);
    await act(admin, tid, 'start');
    // the first jobs are committed: kill at once, in the middle of the item loop
    await eventually(async () => ((await countJobs(tid)) >= 3 ? true : undefined), 60_000, 2);
    worker.child.kill('SIGKILL');
    await worker.exited;
    // what the kill left: items whose job exists but that were not handed off (submitted, not reported)
    window = Number((await api.services.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM task_items t WHERE t.tid = $1::uuid AND NOT t.handed_off AND t.outcome IN ('queued', 'running')
         AND EXISTS (SELECT 1 FROM print_jobs j WHERE j.task->>'tid' = $1::text AND j.task->>'item' = t.item::text)`, [tid])).rows[0]!.n);
    expect(await countJobs(tid)).toBeLessThan(40);
  } finally {
    worker.child.kill('SIGKILL');
  }
  console.log(`print-task-crash: ${await countJobs(tid)} jobs when killed; ${window} item(s) submitted but not handed off`);
  taker = await startTestRuntime({ shareWith: api, parts: { api: false, workers: true }, overrides: { queues: QUEUES } });
  expect((await admin.put('/v3/printers/crash%20printer/resume')).status).toBe(200);
  const done = await taskWhen(admin, tid, 'completed', 90_000);
  expect(Object.keys(done.cstats)).toHaveLength(40);
  const { rows } = await api.services.db.query<{ item: string; n: string | number }>(
    "SELECT task->>'item' AS item, count(*) AS n FROM print_jobs WHERE task->>'tid' = $1 GROUP BY 1", [tid]);
  expect(rows).toHaveLength(40);
  // count(*) is a bigint: a string or a number by driver
  expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([]);
  expect(new Set(rows.map((r) => r.item))).toEqual(new Set(items));
  const got = sink.received().map(String).filter((b) => b.startsWith('%PDF-1.4 document '));
  expect(got.sort()).toEqual(docs.map((_, i) => `%PDF-1.4 document ${i}`).sort());
  // the tests below run the workers they need themselves
  await taker.close(false);
  taker = undefined;
}, 180_000);

it('kill -9 right after an abort committed: the hook still cancels the task\'s waiting jobs (it was queued with the abort)', async () => {
  const held = await TcpSink.start({ mode: 'hold' });
  let worker: Awaited<ReturnType<typeof startProcess>> | undefined;
  let hookTaker: TestRuntime | undefined;
  try {
    expect((await admin.post('/v3/printers/', { name: 'abort printer', connection: held.connection })).status).toBe(200);
    const docs: string[] = [];
    for (let i = 0; i < 6; i++) docs.push(await storeDocument(admin, `abort-${i}.pdf`, `%PDF-1.4 abort ${i}`));
    const { tid, items } = await printTask(admin, 'aborted', docs.map((href) => ({ href, metadata: { printer: 'abort printer' } })));
    const config = await processConfig('abort-all.yaml');
    // one process answers the abort and runs the workers: the one killed
    worker = await startProcess('all', { DATA_DIR: api.dataDir, CONFIG: config });
    await waitLog(worker, /workers running/, 60_000);
    await waitReady(worker.url!);
    const token = await (await DevIssuer.open(api.dataDir, `${worker.url}/dev-issuer`)).mint({ user: 'admin', roles: ['admin'] });
    await act(admin, tid, 'start');
    // the first document is being delivered (the printer holds it), the other five wait behind it
    await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processing', 60_000);
    for (const item of items.slice(1)) await itemWhen(admin, tid, item, (e) => e.state === 'waitprocessing', 60_000);
    // the printer holds its queue across the restart: what could cancel the waiting jobs is the hook alone
    expect((await admin.put('/v3/printers/abort%20printer/pause')).status).toBe(200);
    const abort = fetch(`${worker.url}/v1/services/print/tasks/${tid}/action`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ action: 'abort' }),
    }).then((r) => r.status, () => 'cut');
    // killed the moment the abort has committed, whatever the process was doing next
    await eventually(async () => ((await api.services.db.query<{ status: string }>('SELECT status FROM tasks WHERE tid = $1', [tid])).rows[0]!.status === 'aborted' ? true : undefined), 30_000, 1);
    worker.child.kill('SIGKILL');
    await worker.exited;
    console.log(`print-task-crash: the abort request ${await abort}`);
    const atKill = (await jobsOf(admin, tid)).filter((j) => j.status === 'canceled').length;
    console.log(`print-task-crash: ${atKill} of 5 waiting jobs canceled when the process was killed`);
    hookTaker = await startTestRuntime({ shareWith: api, parts: { api: false, workers: true }, overrides: { queues: QUEUES } });
    for (const item of items.slice(1)) {
      await itemWhen(admin, tid, item, (e) => e.state === 'canceled' && e.message === 'canceled: the task was aborted', 60_000);
    }
    const jobs = await jobsOf(admin, tid);
    expect(jobs.filter((j) => j.task.item !== items[0]).map((j) => j.status)).toEqual(Array(5).fill('canceled'));
    expect((await getTask(admin, tid)).status).toBe('aborted');
    // the debt is paid: nothing owed any more (the hook clears it after its last cancel, in a statement of its own)
    await eventually(async () => ((await api.services.db.query<{ hook_due: string | null }>(
      'SELECT hook_due FROM tasks WHERE tid = $1', [tid])).rows[0]!.hook_due === null ? true : undefined), 30_000, 50);
    // released, the printer prints none of them (only the document cut by the kill ever reached it)
    expect((await admin.put('/v3/printers/abort%20printer/resume')).status).toBe(200);
    await new Promise((r) => setTimeout(r, 500));
    expect(held.received().map(String).filter((b) => b !== '' && b !== '%PDF-1.4 abort 0')).toEqual([]);
  } finally {
    worker?.child.kill('SIGKILL');
    await hookTaker?.close(false);
    await held.close();
  }
}, 180_000);

it('a hook whose job Redis lost: the reconcile pass queues it again from the task row, and the jobs follow the task', async () => {
  expect((await admin.post('/v3/printers/', { name: 'lost hook printer', connection: sink.connection })).status).toBe(200);
  // the printer holds its queue: the task's jobs wait, and only the hook can change them
  expect((await admin.put('/v3/printers/lost%20hook%20printer/pause')).status).toBe(200);
  const docs: string[] = [];
  for (let i = 0; i < 3; i++) docs.push(await storeDocument(admin, `lost-hook-${i}.pdf`, `%PDF-1.4 lost hook ${i}`));
  const { tid, items } = await printTask(admin, 'lost hook', docs.map((href) => ({ href, metadata: { printer: 'lost hook printer' } })));
  let workers = await startTestRuntime({ shareWith: api, parts: { api: false, workers: true }, overrides: { queues: QUEUES } });
  try {
    await act(admin, tid, 'start');
    for (const item of items) await itemWhen(admin, tid, item, (e) => e.state === 'waitprocessing', 60_000);
    await workers.close(false);
    // paused with no worker running: its hook's job reaches Redis (the API relays) and is lost with it
    await act(admin, tid, 'pause');
    const owed = Number((await api.services.db.query<{ hook_due: string }>('SELECT hook_due FROM tasks WHERE tid = $1', [tid])).rows[0]!.hook_due);
    expect(owed).toBeGreaterThan(0);
    await eventually(async () => (Number((await api.services.db.query<{ n: string }>(
      "SELECT count(*) AS n FROM outbox WHERE job_id = $1", [`task.hook.${tid}.${owed}`])).rows[0]!.n) === 0 ? true : undefined));
    await dropQueues(api.prefix);
    expect((await jobsOf(admin, tid)).map((j) => j.status)).toEqual(['waitprocessing', 'waitprocessing', 'waitprocessing']);
    // a worker's first reconcile pass finds the debt in the task row
    workers = await startTestRuntime({ shareWith: api, parts: { api: false, workers: true }, overrides: { queues: QUEUES } });
    await eventually(async () => ((await jobsOf(admin, tid)).every((j) => j.status === 'paused') ? true : undefined), 30_000);
    await eventually(async () => ((await api.services.db.query<{ hook_due: string | null }>('SELECT hook_due FROM tasks WHERE tid = $1', [tid])).rows[0]!.hook_due === null ? true : undefined));
    // resumed: the resume's hook releases them, the printer prints the three
    expect((await admin.put('/v3/printers/lost%20hook%20printer/resume')).status).toBe(200);
    await act(admin, tid, 'resume');
    await taskWhen(admin, tid, 'completed', 60_000);
    expect(sink.received().map(String).filter((b) => b.startsWith('%PDF-1.4 lost hook ')).sort()).toEqual(docs.map((_, i) => `%PDF-1.4 lost hook ${i}`));
  } finally {
    await workers.close(false);
  }
}, 180_000);
