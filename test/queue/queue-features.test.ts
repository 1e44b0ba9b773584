import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { InvalidScheduleError, createJobQueue, obliterateQueues, startWorkers } from '../../src/queue/job-queue.js';
import { createLogger } from '../../src/logging/logger.js';
import { RunAgainError } from '../../src/queue/jobs.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { eventually } from '../helpers/runtime.js';

/** Schedules, concurrency per queue and the abort signal, on real Redis under an own prefix. */
const log = createLogger('silent');
const prefix = uniqueName('qf');
const opts = { url: TEST_REDIS_URL, prefix, log };
afterAll(() => obliterateQueues(opts));

const uuid = (n: number) => `6f1c0f7e-8a55-4c5e-9d1e-${String(n).padStart(12, '0')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('job schedulers', () => {
  it('runs a job on an interval and on a cron pattern; unschedule stops both', async () => {
    const q = createJobQueue(opts);
    const runs: number[] = [];
    const workers = startWorkers({ 'housekeeping.run': async () => void runs.push(Date.now()) }, { ...opts, concurrency: 1 });
    const raw = new Queue('housekeeping', { connection: { url: TEST_REDIS_URL }, prefix });
    try {
      await q.schedule('housekeeping.run', {}, { everyMs: 300 });
      await eventually(async () => (runs.length >= 3 ? true : undefined), 20_000);
      // the same payload again replaces the schedule (one scheduler, now a cron pattern: every second)
      await q.schedule('housekeeping.run', {}, { cron: '* * * * * *' });
      expect(await raw.getJobSchedulersCount()).toBe(1);
      expect((await raw.getJobScheduler('housekeeping'))?.pattern).toBe('* * * * * *');
      const before = runs.length;
      await eventually(async () => (runs.length >= before + 2 ? true : undefined), 20_000);

      expect(await q.unschedule('housekeeping.run', {})).toBe(true);
      expect(await q.unschedule('housekeeping.run', {})).toBe(false);
      expect(await raw.getJobSchedulersCount()).toBe(0);
      await sleep(500); // a run already taken may still finish
      const after = runs.length;
      await sleep(2500);
      expect(runs.length).toBe(after);
    } finally {
      await workers.close();
      await raw.close();
      await q.close();
    }
  });

  it('refuses a bad cron pattern or interval before anything is stored', async () => {
    const q = createJobQueue(opts);
    const raw = new Queue('housekeeping', { connection: { url: TEST_REDIS_URL }, prefix });
    try {
      await expect(q.schedule('housekeeping.run', {}, { cron: 'every tuesday' })).rejects.toBeInstanceOf(InvalidScheduleError);
      await expect(q.schedule('housekeeping.run', {}, { cron: '* * * * *', tz: 'Mars/Olympus' })).rejects.toBeInstanceOf(InvalidScheduleError);
      await expect(q.schedule('housekeeping.run', {}, { everyMs: 0 })).rejects.toBeInstanceOf(InvalidScheduleError);
      expect(await raw.getJobSchedulersCount()).toBe(0);
    } finally {
      await raw.close();
      await q.close();
    }
  });
});

describe('workers', () => {
  it('run as many jobs at once as their queue is configured for', async () => {
    const q = createJobQueue(opts);
    let running = { commands: 0, previews: 0 };
    const peak = { commands: 0, previews: 0 };
    const busy = (queue: 'commands' | 'previews') => async () => {
      running = { ...running, [queue]: running[queue] + 1 };
      peak[queue] = Math.max(peak[queue], running[queue]);
      await sleep(400);
      running = { ...running, [queue]: running[queue] - 1 };
    };
    const workers = startWorkers({ 'command.run': busy('commands'), 'preview.render': busy('previews') },
      { ...opts, concurrency: { default: 1, commands: 3 } });
    try {
      for (let i = 0; i < 6; i++) {
        await q.enqueue('command.run', { cid: uuid(100 + i), sid: 'store' });
        await q.enqueue('preview.render', { sid: 'store', uuid: uuid(200 + i), version: 'v1' });
      }
      await eventually(async () => {
        const d = await q.depths();
        const left = [d.commands, d.previews].reduce((n, c) => n + (c.waiting ?? 0) + (c.active ?? 0), 0);
        return left === 0 ? true : undefined;
      }, 30_000);
      expect(peak).toEqual({ commands: 3, previews: 1 });
    } finally {
      await workers.close();
      await q.close();
    }
  });

  it('give each handler a signal: aborted by cancel, and at close once the drain period is over', async () => {
    const q = createJobQueue(opts);
    const reasons = new Map<string, unknown>();
    const started = new Set<string>();
    const workers = startWorkers({
      'command.run': async ({ cid }, ctx) => {
        started.add(cid);
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        reasons.set(cid, ctx.signal.reason);
        throw new Error('stopped');
      },
    }, { ...opts, concurrency: 2 });
    try {
      const a = uuid(300);
      const b = uuid(301);
      const idA = await q.enqueue('command.run', { cid: a, sid: 'store' });
      await q.enqueue('command.run', { cid: b, sid: 'store' });
      await eventually(async () => (started.size === 2 ? true : undefined), 20_000);
      expect(workers.cancel('no-such-job')).toBe(false);
      expect(workers.cancel(idA, 'task aborted')).toBe(true);
      await eventually(async () => (reasons.has(a) ? true : undefined));
      expect(reasons.get(a)).toBe('task aborted');
      expect(reasons.has(b)).toBe(false);
      // b never finishes on its own: close waits the drain period, then aborts it
      const t0 = Date.now();
      await workers.close(1000);
      expect(reasons.get(b)).toBe('shutdown');
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      await workers.close();
      await q.close();
    }
  });

  it('abort the signal of a job whose lock was lost (another worker may run it now)', async () => {
    const q = createJobQueue(opts);
    const redis = new Redis(TEST_REDIS_URL);
    let reason: unknown;
    let started = false;
    const workers = startWorkers({
      'command.run': async ({ cid }, ctx) => {
        if (cid !== uuid(400)) return; // jobs of the test before, retried after their abort
        started = true;
        await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve(), { once: true }));
        reason = ctx.signal.reason;
      },
    }, { ...opts, concurrency: 1, lockDurationMs: 1000 });
    try {
      const id = await q.enqueue('command.run', { cid: uuid(400), sid: 'store' });
      await eventually(async () => (started ? true : undefined), 20_000);
      // the lock goes away behind the worker's back (expired while its event loop was blocked, taken over)
      expect(await redis.del(`${prefix}:commands:${id}:lock`)).toBe(1);
      await eventually(async () => (reason !== undefined ? true : undefined), 20_000);
      expect(reason).toBe('lock lost');
    } finally {
      redis.disconnect();
      await workers.close(1000);
      await q.close();
    }
  });

  it('after a job ran again for a fault of this process (its database away), take no job of that queue until `reachable` answers', async () => {
    const own = { ...opts, prefix: uniqueName('qh') };
    const q = createJobQueue(own);
    let reachable = false;
    let asked = 0;
    const ran: string[] = [];
    const workers = startWorkers({
      'command.run': async ({ cid }) => {
        ran.push(cid);
        if (ran.length === 1) throw new RunAgainError(0, 'the database cannot be reached', { localFault: true });
      },
    }, { ...own, concurrency: 1, reachable: async () => (asked++, reachable) });
    try {
      await q.enqueue('command.run', { cid: uuid(500), sid: 'store' });
      await eventually(async () => (ran.length > 0 ? true : undefined), 20_000);
      await q.enqueue('command.run', { cid: uuid(501), sid: 'store' });
      // held: neither the job due again at once nor the new one is taken while the database does not answer
      await eventually(async () => (asked >= 3 ? true : undefined), 20_000);
      expect(ran).toEqual([uuid(500)]);
      reachable = true;
      await eventually(async () => (ran.length === 3 ? true : undefined), 20_000);
      expect(ran.slice(1).sort()).toEqual([uuid(500), uuid(501)]);
    } finally {
      await workers.close(1000);
      await q.close();
      await obliterateQueues(own);
    }
  });
});
