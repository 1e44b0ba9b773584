import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../../helpers/env.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { killAll, startProcess, waitLog } from '../../../helpers/process.js';
import { addPrinter, FAST, jobs, logText, submit, until } from './harness.js';

/**
 * At most once across a crash: a real worker process (src/entrypoints/worker.ts) hands a job to a
 * printer that takes the bytes and never acknowledges, is killed with
 * SIGKILL, and the worker that takes over finds the job handed off without
 * an outcome: `error`, "delivery uncertain", never sent again.
 */
let submitter: TestRuntime;
let taker: TestRuntime | undefined;
let sink: TcpSink;
const QUEUES = { lockDurationMs: 2000, reconcileIntervalMs: 1000, concurrency: { default: 2, print: 8 } };

beforeAll(async () => {
  submitter = await startTestRuntime({ parts: { api: false, workers: false } });
  sink = await TcpSink.start({ mode: 'hold' });
});
afterAll(async () => {
  killAll();
  await taker?.close(false);
  await submitter?.close();
  await sink?.close();
});

it('kill -9 between hand-off and acknowledgement: the job ends in error "delivery uncertain" and the printer got it once', async () => {
  const config = path.join(submitter.dataDir, 'dispatch-worker.yaml');
  await writeFile(config, JSON.stringify({
    database: { url: TEST_DATABASE_URL, schema: submitter.schema },
    redis: { url: TEST_REDIS_URL, prefix: submitter.prefix },
    queues: QUEUES,
    printDispatch: FAST,
  }));
  const worker = await startProcess('worker', { DATA_DIR: submitter.dataDir, CONFIG: config });
  try {
    await waitLog(worker, /workers running/, 60_000);
    await addPrinter(submitter, 'mute', sink.connection);
    const first = await submit(submitter, 'mute', 'the only copy\n');
    await submit(submitter, 'mute', 'next job\n');
    // the device has every byte of the first job, and the worker waits for its acknowledgement
    await eventually(async () => (sink.connections[0]?.bytes === 14 ? true : undefined), 30_000, 20);
    const [inFlight] = await jobs(submitter, [first.id]);
    expect(inFlight!.status).toBe('processing');
    expect(inFlight!.handoff_at).not.toBeNull();
  } finally {
    worker.child.kill('SIGKILL');
  }
  await worker.exited;
  // from now on the printer acknowledges; a resend of the first job would show here
  sink.mode = 'close';
  taker = await startTestRuntime({
    shareWith: submitter,
    parts: { api: false, workers: true },
    overrides: { printDispatch: FAST, queues: QUEUES },
  });
  const { rows: all } = await submitter.services.db.query<{ id: string }>('SELECT id FROM print_jobs ORDER BY id');
  const [first, second] = await until(submitter, all.map((r) => r.id), ['processed', 'error'], 60_000);
  expect(first!.status).toBe('error');
  expect(first!.message).toBe('delivery uncertain');
  expect(first!.handoff_at).toBeNull();
  expect(await logText(submitter, first!.id)).toMatch(/delivery uncertain: handed to the device at .* without an acknowledgement/);
  expect(second!.status).toBe('processed');
  const got = sink.connections.filter((c) => c.bytes > 0).map((c) => Buffer.concat(c.chunks).toString());
  expect(got.filter((b) => b === 'the only copy\n')).toHaveLength(1);
  expect(got.filter((b) => b === 'next job\n')).toHaveLength(1);
}, 120_000);
