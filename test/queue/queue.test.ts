import { afterAll, describe, expect, it } from 'vitest';
import { createJobQueue, obliterateQueues, startWorkers } from '../../src/queue/job-queue.js';
import { InvalidJobError, PermanentJobError, jobIdFor } from '../../src/queue/jobs.js';
import { createLogger } from '../../src/logging/logger.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { eventually } from '../helpers/runtime.js';

const log = createLogger('silent');
const prefix = uniqueName('q');
const opts = { url: TEST_REDIS_URL, prefix, log };
afterAll(() => obliterateQueues(opts));

const CID = '6f1c0f7e-8a55-4c5e-9d1e-2b8f0a3c4d5e';

describe('job queue (real Redis, own prefix)', () => {
  it('validates payloads on entry', async () => {
    const q = createJobQueue(opts);
    try {
      await expect(q.enqueue('command.run', { cid: 'nope', sid: 'store' } as never)).rejects.toBeInstanceOf(InvalidJobError);
      await expect(q.enqueue('command.run', { cid: CID, sid: 'store', extra: 1 } as never)).rejects.toBeInstanceOf(InvalidJobError);
    } finally {
      await q.close();
    }
  });

  it('derives job ids from entity and transition, so re-enqueueing is idempotent', async () => {
    expect(jobIdFor('command.run', { cid: CID, sid: 's' })).toBe(`command.${CID}.run`);
    const q = createJobQueue(opts);
    try {
      await q.enqueue('command.run', { cid: CID, sid: 'store' });
      await q.enqueue('command.run', { cid: CID, sid: 'store' });
      expect((await q.depths()).commands.waiting).toBe(1);
    } finally {
      await q.close();
    }
  });

  it('workers run handlers, retry failures, stop at once on a permanent error, and report outcomes', async () => {
    const q = createJobQueue(opts);
    const outcomes: string[] = [];
    const seen: string[] = [];
    let flaky = 0;
    const workers = startWorkers({
      'command.run': async ({ cid }) => {
        seen.push(cid);
      },
      'preview.render': async ({ version }) => {
        if (version === 'flaky' && flaky++ === 0) throw new Error('transient');
        if (version === 'doomed') throw new PermanentJobError('cannot ever work');
      },
    }, { ...opts, concurrency: 2, onOutcome: (_q, name, outcome) => outcomes.push(`${name}:${outcome}`) });
    try {
      await q.enqueue('preview.render', { sid: 's', uuid: CID, version: 'flaky' });
      await q.enqueue('preview.render', { sid: 's', uuid: CID, version: 'doomed' });
      await eventually(async () => (seen.includes(CID) ? true : undefined));
      await eventually(async () => (outcomes.includes('preview.render:completed') && outcomes.includes('preview.render:failed') ? true : undefined), 15_000);
      expect(outcomes.filter((o) => o === 'preview.render:retried')).toHaveLength(1);
      expect(outcomes).toContain('command.run:completed');
    } finally {
      await workers.close();
      await q.close();
    }
  });

  it('close returns only once the handlers it cancelled have ended: nothing of a job runs after the pool closed', async () => {
    const q = createJobQueue(opts);
    let started = false;
    let ended: number | undefined;
    const workers = startWorkers({
      // a handler that takes a while to wind down after its signal (a render thread terminating, a file being closed)
      'preview.render': async (_d, job) => {
        started = true;
        await new Promise<void>((resolve) => job.signal.addEventListener('abort', () => setTimeout(resolve, 1500), { once: true }));
        ended = Date.now();
      },
    }, { ...opts, concurrency: 1 });
    try {
      await q.enqueue('preview.render', { sid: 's', uuid: CID, version: 'slow-to-stop' });
      await eventually(async () => (started ? true : undefined));
    } finally {
      await workers.close(200);
      const closed = Date.now();
      await q.close();
      // before the fix, close returned after the forced close (about 1.2 s) with the handler still running
      expect(ended, 'the handler ended before close returned').toBeDefined();
      expect(ended!).toBeLessThanOrEqual(closed);
    }
  });
});
