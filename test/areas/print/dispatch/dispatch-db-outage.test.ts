import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../../helpers/env.js';
import { killAll, startProcess, waitLog, type TestProcess } from '../../../helpers/process.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpProxy } from '../../../helpers/tcp-proxy.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { addPrinter, FAST, jobs, logText, submit, until } from './harness.js';

/**
 * A database outage while a printer acknowledges (issue 20, item 12): a
 * real worker process reaches PostgreSQL through a proxy the test cuts. The
 * printer acknowledges a job while the database is away; the worker keeps
 * the acknowledgement in memory and writes the outcome once the database is
 * back: the job is `processed`, not "delivery uncertain", and the next job
 * prints once.
 */
let submitter: TestRuntime;
let proxy: TcpProxy;
let sink: TcpSink;
let worker: TestProcess | undefined;

beforeAll(async () => {
  submitter = await startTestRuntime({ parts: { api: false, workers: false } });
  proxy = await TcpProxy.start(TEST_DATABASE_URL);
  sink = await TcpSink.start({ mode: 'hold' });
});
afterAll(async () => {
  killAll();
  await proxy?.close();
  await submitter?.close();
  await sink?.close();
});

it('fault: PostgreSQL away when the printer acknowledges: the outcome is written once it is back (processed, not "delivery uncertain"), the next job prints once', async () => {
  const config = path.join(submitter.dataDir, 'outage-worker.yaml');
  await writeFile(config, JSON.stringify({
    database: { url: proxy.url(TEST_DATABASE_URL), schema: submitter.schema },
    redis: { url: TEST_REDIS_URL, prefix: submitter.prefix },
    // no reconcile pass during the test: only the run itself writes the outcome
    queues: { lockDurationMs: 5000, reconcileIntervalMs: 600_000, concurrency: { default: 2, print: 4 } },
    printDispatch: FAST,
  }));
  worker = await startProcess('worker', { DATA_DIR: submitter.dataDir, CONFIG: config });
  await waitLog(worker, /workers running/, 60_000);
  await addPrinter(submitter, 'blip', sink.connection);
  const first = await submit(submitter, 'blip', 'acknowledged during the outage\n');
  const second = await submit(submitter, 'blip', 'after the outage\n');
  // the device has the whole first job and holds its answer
  await eventually(async () => (sink.held().length === 1 ? true : undefined), 30_000, 20);
  expect((await jobs(submitter, [first.id]))[0]!.status).toBe('processing');

  await proxy.cut();
  sink.mode = 'close';
  sink.release(); // acknowledged while the worker cannot reach the database
  await eventually(async () => (sink.jobs().length === 1 ? true : undefined), 10_000, 20);
  // long enough for a failed run to be retried by BullMQ (1 s, 2 s, 4 s) and to find the database gone again
  await new Promise((r) => setTimeout(r, 8000));
  await proxy.restore();

  const [a, b] = await until(submitter, [first.id, second.id], ['processed', 'error'], 60_000);
  expect(a, await logText(submitter, first.id)).toMatchObject({ status: 'processed', handoff_at: null });
  expect(b!.status).toBe('processed');
  expect(await logText(submitter, first.id)).not.toMatch(/uncertain/);
  await eventually(async () => (sink.jobs().length === 2 ? true : undefined), 10_000, 20);
  expect(sink.received().map(String)).toEqual(['acknowledged during the outage\n', 'after the outage\n']);
  expect(worker.child.exitCode).toBeNull(); // the worker never stopped
}, 180_000);
