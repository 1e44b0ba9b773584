import { Queue, UnrecoverableError, Worker, type Processor } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Area } from '../../../../src/areas/area.js';
import { AREAS } from '../../../../src/areas/index.js';
import { jobIdFor } from '../../../../src/queue/jobs.js';
import { reconcile } from '../../../../src/worker/reconciler.js';
import { TEST_REDIS_URL } from '../../../helpers/env.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { addPrinter, FAST, jobs, submit, until } from './harness.js';

/**
 * The reconciler and a printer's long-lived dispatch job (issue 20, item
 * 10). The job's id never changes, so every outage that fails it past its
 * attempts adds a re-creation: it must be re-created every time, never
 * abandoned for the count (the printer would stop for good); a printer that
 * keeps failing on one job says so in /v3/printers; one repair that throws
 * does not stop the pass.
 *
 * An API-only runtime (no workers): the test shapes the dispatch jobs with a
 * BullMQ worker of its own on the same prefix (each fails as a run does
 * while PostgreSQL is down) and calls the reconciler directly; a worker
 * runtime on the same storage prints at the end.
 */
let rt: TestRuntime;
let workers: TestRuntime | undefined;
let print: Queue;
const sinks: TcpSink[] = [];
const overrides = { printDispatch: FAST, queues: { maxRecreations: 3, reconcileIntervalMs: 600_000, concurrency: { default: 2, print: 8 } } };

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides });
  print = new Queue('print', { connection: { url: TEST_REDIS_URL }, prefix: rt.prefix });
});
afterAll(async () => {
  await workers?.close(false);
  await print?.close();
  await rt?.close();
  for (const s of sinks) await s.close();
});

async function printer(name: string): Promise<TcpSink> {
  const sink = await TcpSink.start();
  sinks.push(sink);
  await addPrinter(rt, name, sink.connection);
  return sink;
}

/**
 * Each named printer's dispatch job runs once more and fails with `fail`:
 * with one attempt, past its attempts at once; an UnrecoverableError fails
 * it for good before its attempts are used up (`attempts` > 1).
 */
async function failDispatch(printers: readonly string[], fail: () => Error, attempts = 1): Promise<void> {
  const ids = printers.map((p) => jobIdFor('print.dispatch', { printer: p }));
  for (const [i, id] of ids.entries()) {
    await print.remove(id);
    await print.add('print.dispatch', { printer: printers[i]! }, { jobId: id, attempts });
  }
  const processor: Processor = async () => {
    throw fail();
  };
  const w = new Worker('print', processor, { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix: rt.prefix, concurrency: 8 });
  try {
    await eventually(async () => ((await Promise.all(ids.map((id) => print.getJobState(id)))).every((s) => s === 'failed') ? true : undefined), 30_000, 100);
  } finally {
    await w.close();
  }
}

/** Waits until the submissions' wake-ups are in Redis (the outbox relayed them). */
const relayed = () => eventually(async () => {
  const { rows } = await rt.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox`);
  return rows[0]!.n === 0 ? true : undefined;
}, 30_000, 100);

describe('fault: reconciling printers\' long-lived dispatch jobs', { timeout: 180_000 }, () => {
  it('fault: four outages that fail two busy printers\' dispatch past their attempts: re-created every time, never abandoned; the printers say they keep failing, then print everything', async () => {
    const names = ['outage-a', 'outage-b'];
    const sink = { 'outage-a': await printer('outage-a'), 'outage-b': await printer('outage-b') };
    const ids: string[] = [];
    for (const n of names) for (let i = 0; i < 3; i++) ids.push((await submit(rt, n, `${n} ${i}\n`)).id);
    await relayed();
    for (let outage = 1; outage <= 4; outage++) {
      await failDispatch(names, () => new Error(`connect ECONNREFUSED (outage ${outage})`));
      const counts = await reconcile(rt.services, AREAS);
      expect(counts['print-jobs'], `outage ${outage}`).toEqual({ recreated: 2 });
      for (const n of names) expect(await print.getJobState(jobIdFor('print.dispatch', { printer: n })), `outage ${outage}`).toBe('waiting');
    }
    // past queues.maxRecreations on the same head job: visible on the printer, not a silent idle
    const admin = rt.client.withToken(await rt.token('root', ['admin']));
    for (const n of names) {
      const p = (await admin.get(`/v3/printers/${n}`)).body as { runtime: { status: string }; error: { message: string } | null };
      expect(p.runtime.status).toBe('error');
      expect(p.error?.message).toMatch(/^dispatch keeps failing on job \d+: connect ECONNREFUSED \(outage 4\) \(re-created 3 times\)/);
    }
    expect((await jobs(rt, ids)).map((j) => j.status)).toEqual(ids.map(() => 'waitprocessing'));
    // a pass with nothing failed finds the jobs queued and leaves them alone
    expect((await reconcile(rt.services, AREAS))['print-jobs']).toBeUndefined();

    // the database is back: workers print every job, in order, and the printers' errors clear
    workers = await startTestRuntime({ shareWith: rt, parts: { api: false, workers: true }, overrides });
    await until(rt, ids, ['processed'], 60_000);
    const more = await submit(rt, 'outage-a', 'outage-a after\n');
    await until(rt, [more.id], ['processed'], 60_000);
    for (const n of names) {
      await eventually(async () => (sink[n as keyof typeof sink].jobs().length >= (n === 'outage-a' ? 4 : 3) ? true : undefined), 10_000);
      const p = (await admin.get(`/v3/printers/${n}`)).body as { runtime: { status: string }; error: unknown };
      expect(p.error).toBeNull();
      expect(p.runtime.status).toBe('idle');
    }
    expect(sink['outage-a'].received().map(String)).toEqual(['outage-a 0\n', 'outage-a 1\n', 'outage-a 2\n', 'outage-a after\n']);
    await workers.close(false);
    workers = undefined;
  });

  it('fault: a permanent failure abandons the head job only (a waiting one may end in error), and the printer goes on with the rest', async () => {
    await printer('poisoned');
    const ids = [(await submit(rt, 'poisoned', 'p0')).id, (await submit(rt, 'poisoned', 'p1')).id];
    await relayed();
    await failDispatch(['poisoned'], () => new UnrecoverableError('cannot ever work'), 5);
    const counts = await reconcile(rt.services, AREAS);
    expect(counts['print-jobs']).toEqual({ abandoned: 1 });
    const [first, second] = await jobs(rt, ids);
    expect(first).toMatchObject({ status: 'error', message: 'dispatch abandoned: cannot ever work' });
    expect(second!.status).toBe('waitprocessing');
    expect(await print.getJobState(jobIdFor('print.dispatch', { printer: 'poisoned' }))).toBe('waiting');
  });

  it('fault: one repair that throws does not stop the pass: logged, counted in /metrics, the printers after it repaired', async () => {
    await printer('after-broken');
    const ids = [(await submit(rt, 'after-broken', 'x')).id];
    await relayed();
    await print.remove(jobIdFor('print.dispatch', { printer: 'after-broken' })); // Redis lost it
    const broken: Area = {
      name: 'broken',
      // a row that makes no valid job, whose abandon step fails
      pending: async () => [{ name: 'print.dispatch', data: { printer: '' } }],
      abandon: async () => {
        throw new Error('abandon failed');
      },
    };
    const counts = await reconcile(rt.services, [broken, ...AREAS]);
    expect(counts.broken).toEqual({ failed: 1 });
    expect(counts['print-jobs']?.enqueued).toBeGreaterThanOrEqual(1);
    expect(await print.getJobState(jobIdFor('print.dispatch', { printer: 'after-broken' }))).toBe('waiting');
    const metrics = await (await fetch(`${rt.url}/metrics`)).text();
    expect(metrics).toMatch(/^reconcile_repair_failures_total\{area="broken"\} 1$/m);
    expect((await jobs(rt, ids))[0]!.status).toBe('waitprocessing');
  });
});
