import { Redis } from 'ioredis';
import { Queue, UnrecoverableError, Worker, type Processor } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AREAS } from '../../src/areas/index.js';
import { reconcile } from '../../src/worker/reconciler.js';
import { TEST_REDIS_URL } from '../helpers/env.js';
import { eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The reconciler's decisions, one per state a pending row's job can be in.
 * An API-only runtime (no workers of its own); the jobs are shaped by BullMQ
 * workers of the test on the same prefix, the reconciler is called directly.
 */
let rt: TestRuntime;
const queues = new Map<string, Queue>();
const queue = (name: string) => {
  let q = queues.get(name);
  if (!q) queues.set(name, (q = new Queue(name, { connection: { url: TEST_REDIS_URL }, prefix: rt.prefix })));
  return q;
};

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { queues: { maxRecreations: 2, lockDurationMs: 1000 } } });
});
afterAll(async () => {
  for (const q of queues.values()) await q.close();
  await rt?.close();
});

/** Lets a test worker take every waiting job of `name` once with `processor`, then stops it. */
async function runOnce(name: string, processor: Processor, until: () => Promise<boolean>): Promise<void> {
  const w = new Worker(name, processor, { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix: rt.prefix });
  try {
    await eventually(async () => ((await until()) ? true : undefined), 30_000, 100);
  } finally {
    await w.close();
  }
}

async function launchDelete(): Promise<string> {
  const client = rt.client.withToken(await rt.token('alice'));
  const doc = (await client.post('/v1/services/store/repo', { name: `d-${Math.random()}`, type: 'collection' })).body.uuid as string;
  const res = await client.post('/v1/services/store/repo/command', { command: 'delete', parameters: { source: doc } });
  expect(res.status).toBe(200);
  return res.body.cid as string;
}

const command = async (cid: string) =>
  (await rt.services.db.query<{ state: string; error: { code: string; message: string } | null }>('SELECT state, error FROM commands WHERE cid = $1', [cid])).rows[0]!;

describe('reconciler repairs', () => {
  it('a job that failed for good (UnrecoverableError) fails its row at once with JOB_ABANDONED', async () => {
    const cid = await launchDelete();
    await runOnce('commands', async () => {
      throw new UnrecoverableError('cannot ever work');
    }, async () => (await queue('commands').getJobState(`command.${cid}.run`)) === 'failed');
    const counts = await reconcile(rt.services, AREAS);
    expect(counts.commands?.abandoned).toBe(1);
    const row = await command(cid);
    expect(row.state).toBe('failure');
    expect(row.error).toEqual({ code: 'JOB_ABANDONED', message: expect.stringContaining('cannot ever work') });
    // the client reads it like any failed command, once
    const client = rt.client.withToken(await rt.token('alice'));
    expect((await client.get(`/v1/services/store/repo/command/${cid}`)).body.error.code).toBe('JOB_ABANDONED');
  });

  it('a job failed past its attempts is re-created with all its attempts, up to queues.maxRecreations, then the row is failed', async () => {
    const cid = await launchDelete();
    const jobId = `command.${cid}.run`;
    for (let round = 1; round <= 3; round++) {
      // one attempt only, so that it fails past its attempts at once
      const q = queue('commands');
      await q.remove(jobId);
      await q.add('command.run', { cid, sid: 'store' }, { jobId, attempts: 1 });
      await runOnce('commands', async () => {
        throw new Error(`transient ${round}`);
      }, async () => (await q.getJobState(jobId)) === 'failed');
      const counts = await reconcile(rt.services, AREAS);
      if (round <= 2) {
        expect(counts.commands?.recreated).toBe(1);
        const job = (await q.getJob(jobId))!;
        expect(await job.getState()).toBe('waiting');
        expect(job.opts.attempts).toBe(5); // afresh, as the job table says
        expect((await command(cid)).state).toBe('queued');
      } else {
        expect(counts.commands?.abandoned).toBe(1);
        const row = await command(cid);
        expect(row.state).toBe('failure');
        expect(row.error!.message).toMatch(/transient 3 \(re-created 2 times\)/);
      }
    }
    // a row that is final is no longer looked at
    expect((await reconcile(rt.services, AREAS)).commands).toBeUndefined();
  });

  it('reconcilers of several processes replace one failed run of a job once, and count it once', async () => {
    const cid = await launchDelete();
    const jobId = `command.${cid}.run`;
    const q = queue('commands');
    await q.remove(jobId);
    await q.add('command.run', { cid, sid: 'store' }, { jobId, attempts: 1 });
    await runOnce('commands', async () => {
      throw new Error('transient');
    }, async () => (await q.getJobState(jobId)) === 'failed');
    const passes = await Promise.all([1, 2, 3].map(() => reconcile(rt.services, AREAS)));
    expect(passes.reduce((n, c) => n + (c.commands?.recreated ?? 0), 0)).toBe(1);
    const { rows } = await rt.services.db.query<{ count: number }>('SELECT count FROM job_recreations WHERE job_id = $1', [jobId]);
    expect(rows).toEqual([{ count: 1 }]);
    expect(await q.getJobState(jobId)).toBe('waiting');
  });

  it('a job left active by a dead worker (no lock for two lock periods) is re-created', async () => {
    const cid = await launchDelete();
    const jobId = `command.${cid}.run`;
    const q = queue('commands');
    // a worker takes the job and dies: no more lock renewals, and no worker left to run stall checks
    const w = new Worker('commands', () => new Promise(() => {}), { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix: rt.prefix, lockDuration: 1000, concurrency: 50 });
    await eventually(async () => ((await q.getJobState(jobId)) === 'active' ? true : undefined), 30_000, 100);
    await w.close(true);
    expect((await reconcile(rt.services, AREAS)).commands).toBeUndefined(); // lock just lapsed: not yet
    await new Promise((r) => setTimeout(r, 2500));
    expect(await q.getJobState(jobId)).toBe('active');
    // (jobs of earlier tests' pending rows died with that worker too)
    expect((await reconcile(rt.services, AREAS)).commands?.recreated).toBeGreaterThanOrEqual(1);
    expect(await q.getJobState(jobId)).toBe('waiting');
  });

  it('queued and running jobs are left alone; a missing one is enqueued (no re-creation counted)', async () => {
    const cid = await launchDelete();
    const before = await reconcile(rt.services, AREAS);
    expect(before.commands).toBeUndefined(); // waiting: nothing to do
    await queue('commands').remove(`command.${cid}.run`);
    expect((await reconcile(rt.services, AREAS)).commands?.enqueued).toBe(1);
    expect(await queue('commands').getJobState(`command.${cid}.run`)).toBe('waiting');
    const { rows } = await rt.services.db.query('SELECT 1 FROM job_recreations WHERE job_id = $1', [`command.${cid}.run`]);
    expect(rows).toHaveLength(0);
  });

  it('a delayed job long overdue (a worker missed its wake-up) is promoted to waiting; one not yet overdue is left delayed', async () => {
    const q = queue('commands');
    const [late, soon] = [await launchDelete(), await launchDelete()];
    const [lateId, soonId] = [`command.${late}.run`, `command.${soon}.run`];
    for (const [cid, id] of [[late, lateId], [soon, soonId]] as const) {
      await q.remove(id);
      await q.add('command.run', { cid, sid: 'store' }, { jobId: id, delay: 60_000 });
    }
    // what a missed wake-up leaves: due a minute ago and still delayed (no worker runs here to promote it);
    // the other was due 3 s ago, within what a worker may take to promote it
    const redis = new Redis(TEST_REDIS_URL);
    const lateDue = Date.now() - 60_000;
    await redis.zadd(q.toKey('delayed'), lateDue * 0x1000, lateId);
    await redis.zadd(q.toKey('delayed'), (Date.now() - 3000) * 0x1000, soonId);
    redis.disconnect();
    expect(await q.getJobState(lateId)).toBe('delayed');
    expect(await rt.services.queue.inspect('command.run', { cid: late, sid: 'store' })).toEqual({ state: 'overdue', dueAt: lateDue });
    expect(await rt.services.queue.inspect('command.run', { cid: soon, sid: 'store' })).toEqual({ state: 'queued' });
    const counts = await reconcile(rt.services, AREAS);
    expect(counts.commands?.promoted).toBe(1);
    expect(await q.getJobState(lateId)).toBe('waiting');
    expect(await q.getJobState(soonId)).toBe('delayed');
    // nothing is counted as a re-creation, and a second pass has nothing to do for it
    expect((await rt.services.db.query('SELECT 1 FROM job_recreations WHERE job_id = $1', [lateId])).rowCount).toBe(0);
    expect((await reconcile(rt.services, AREAS)).commands?.promoted).toBeUndefined();
  });

  it('a preview whose job failed for good, or whose row cannot make a valid job, gets a preview error instead of "not ready" forever', async () => {
    const client = rt.client.withToken(await rt.token('alice'));
    const doc = (await client.post('/v1/services/store/repo', { name: 'p.png', type: 'document' })).body.uuid as string;
    expect((await client.request('PUT', `/v1/services/store/repo/${doc}/content`, { body: 'not an image', headers: { 'content-type': 'image/png' } })).status).toBe(204);
    await runOnce('previews', async () => {
      throw new UnrecoverableError('renderer refused');
    }, async () => ((await queue('previews').getJobCounts('failed')).failed ?? 0) >= 1);
    // a second document whose version no job id can carry
    const other = (await client.post('/v1/services/store/repo', { name: 'q.png', type: 'document' })).body.uuid as string;
    await client.request('PUT', `/v1/services/store/repo/${other}/content`, { body: 'x', headers: { 'content-type': 'image/png' } });
    await rt.services.db.query(`UPDATE entries SET content_version = 'bad/version' WHERE uuid = $1`, [other]);

    const counts = await reconcile(rt.services, AREAS);
    expect(counts.repository?.abandoned).toBe(2);
    const { rows } = await rt.services.db.query<{ uuid: string; preview_error: string }>(
      'SELECT uuid, preview_error FROM entries WHERE uuid = ANY($1) ORDER BY name', [[doc, other]]);
    expect(rows[0]!.preview_error).toMatch(/renderer refused/);
    expect(rows[1]!.preview_error).toMatch(/invalid preview.render payload/);
    expect((await reconcile(rt.services, AREAS)).repository).toBeUndefined();
  });
});
