import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../../helpers/env.js';
import { killAll, startProcess, waitLog, type TestProcess } from '../../../helpers/process.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { addPrinter, FAST, jobs, submit, until } from './harness.js';

/**
 * A graceful stop with a backlog (issue 20, item 11): a real worker process
 * drains two slow printers (each takes a while to acknowledge a job) and
 * gets SIGTERM. It claims nothing new, lets each hand-off in progress finish
 * and records its outcome, and exits; no job ends "delivery uncertain". The
 * next worker prints the rest: every job reaches its printer exactly once,
 * in order.
 */
let submitter: TestRuntime;
let taker: TestRuntime | undefined;
const sinks: TcpSink[] = [];
const QUEUES = { lockDurationMs: 5000, reconcileIntervalMs: 1000, concurrency: { default: 2, print: 8 } };
const JOBS_PER_PRINTER = 40;

beforeAll(async () => {
  submitter = await startTestRuntime({ parts: { api: false, workers: false } });
});
afterAll(async () => {
  killAll();
  await taker?.close(false);
  await submitter?.close();
  for (const s of sinks) await s.close();
});

it('fault: SIGTERM with a backlog: the worker takes nothing new, finishes each hand-off in progress, exits 0; no job "delivery uncertain", each printed once', async () => {
  const config = path.join(submitter.dataDir, 'sigterm-worker.yaml');
  // the grace for running jobs is half the shutdown timeout: 10 s, far longer than one acknowledgement
  await writeFile(config, JSON.stringify({
    database: { url: TEST_DATABASE_URL, schema: submitter.schema },
    redis: { url: TEST_REDIS_URL, prefix: submitter.prefix },
    queues: QUEUES,
    printDispatch: FAST,
    server: { shutdownTimeoutMs: 20_000 },
  }));
  const names = ['slow-a', 'slow-b'];
  const ids: string[] = [];
  const bodies = new Map<string, string[]>();
  for (const n of names) {
    // acknowledges each job 300 ms after its last byte: a hand-off is nearly always in progress
    const s = await TcpSink.start({ ackDelayMs: 300 });
    sinks.push(s);
    await addPrinter(submitter, n, s.connection);
    bodies.set(n, []);
    for (let i = 0; i < JOBS_PER_PRINTER; i++) {
      const body = `${n} job ${i}\n`;
      bodies.get(n)!.push(body);
      ids.push((await submit(submitter, n, body)).id);
    }
  }
  let worker: TestProcess | undefined = await startProcess('worker', { DATA_DIR: submitter.dataDir, CONFIG: config });
  try {
    await waitLog(worker, /workers running/, 60_000);
    // both printers busy, with most of their backlog still waiting
    await eventually(async () => (sinks.every((s) => s.jobs().length >= 3) ? true : undefined), 60_000, 20);
    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
  } finally {
    if (worker.child.exitCode === null) worker.child.kill('SIGKILL');
    worker = undefined;
  }
  const after = await jobs(submitter, ids);
  const by = (status: string) => after.filter((j) => j.status === status);
  expect(by('error').map((j) => `${j.id}: ${j.message}`)).toEqual([]);
  expect(by('processing')).toEqual([]);
  // it stopped well before the backlog was done
  expect(by('processed').length).toBeLessThan(ids.length);
  // what the printers acknowledged is recorded as processed
  for (const [i, n] of names.entries()) {
    const done = after.filter((j) => j.printer === n && j.status === 'processed').length;
    expect(sinks[i]!.jobs().length, n).toBe(done);
  }

  // the next worker carries on from there
  taker = await startTestRuntime({ shareWith: submitter, parts: { api: false, workers: true }, overrides: { printDispatch: FAST, queues: QUEUES } });
  const final = await until(submitter, ids, ['processed', 'error'], 120_000);
  expect(final.filter((j) => j.status !== 'processed').map((j) => `${j.id}: ${j.status} ${j.message}`)).toEqual([]);
  for (const [i, n] of names.entries()) {
    await eventually(async () => (sinks[i]!.jobs().length >= JOBS_PER_PRINTER ? true : undefined), 20_000);
    expect(sinks[i]!.received().map(String), n).toEqual(bodies.get(n));
  }
}, 300_000);
