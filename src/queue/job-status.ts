import type { Job } from 'bullmq';

/**
 * Where a job derived from a database row stands in Redis, as the reconciler
 * needs to know it:
 *
 * - `missing`: no job with that id (Redis wiped, or completed and removed);
 * - `queued`: waiting, delayed or prioritized; `running`: active and locked;
 * - `overdue`: delayed, and its time passed longer ago than any worker takes
 *   to promote it (`overdueAfterMs`): a worker that missed its wake-up (a
 *   class of BullMQ defects: "delayed jobs stuck", taskforcesh/bullmq#2466)
 *   would leave it there for good;
 * - `stalled`: active without a lock for longer than the lock duration (its
 *   worker died and no stall check has moved it back yet);
 * - `failed`: finished as failed, with `why`: `exhausted` (attempts used up),
 *   `stalled` (BullMQ gave up after too many stalls: dead workers, not the
 *   job's fault) or `permanent` (an `UnrecoverableError`: bad payload,
 *   `PermanentJobError`);
 * - `completed`: finished and still kept.
 *
 * `instance` tells this run of the job from an earlier or later one with the
 * same id (its creation and start times), so that reconcilers in several
 * processes seeing the same failed job count and replace it once.
 */
export type JobStatus =
  | { state: 'missing' | 'queued' | 'running' }
  | { state: 'overdue'; dueAt: number }
  | { state: 'completed' | 'stalled'; reason: string; instance: string }
  | { state: 'failed'; why: 'exhausted' | 'stalled' | 'permanent'; reason: string; instance: string };

/**
 * How long past its time a delayed job may wait for a worker to promote it:
 * workers promote due jobs on every fetch and wake for the next one (at most
 * BullMQ's 5 s drain delay when idle), so twice a lock duration, and never
 * under 10 s, is overdue for certain.
 */
const overdueAfterMs = (lockDurationMs: number) => Math.max(10_000, 2 * lockDurationMs);

/**
 * Classifies a job from its state, counters and lock (no message text is
 * matched); `dueAt` reads when a delayed job is due (epoch ms).
 */
export async function jobStatus(job: Job | undefined, locked: () => Promise<boolean>, opts: { lockDurationMs: number; dueAt?: () => Promise<number | undefined> }): Promise<JobStatus> {
  if (!job) return { state: 'missing' };
  const state = await job.getState();
  const instance = `${job.timestamp}:${job.processedOn ?? 0}`;
  switch (state) {
    case 'unknown':
      return { state: 'missing' };
    case 'completed':
      return { state: 'completed', reason: 'the job completed but its work is still pending', instance };
    case 'active': {
      if (await locked()) return { state: 'running' };
      // a lock renewal can lag a little behind; only a lock gone for a whole lock duration means a dead worker
      const since = job.processedOn ?? job.timestamp;
      return Date.now() - since > 2 * opts.lockDurationMs
        ? { state: 'stalled', reason: 'its worker stopped without finishing it', instance }
        : { state: 'running' };
    }
    case 'failed': {
      const reason = job.failedReason || 'failed';
      // Any stall counts as "not the job's fault": workers with another maxStalledCount
      // (an older deploy used BullMQ's 1) fail jobs after fewer stalls than ours.
      // A job that stalled once and then failed for good is re-created a bounded
      // number of times before its row is abandoned: the safe side.
      if (job.stalledCounter > 0) return { state: 'failed', why: 'stalled', reason, instance };
      if (job.attemptsMade >= (job.opts.attempts ?? 1)) return { state: 'failed', why: 'exhausted', reason, instance };
      return { state: 'failed', why: 'permanent', reason, instance };
    }
    case 'delayed': {
      const dueAt = await opts.dueAt?.();
      return dueAt !== undefined && Date.now() - dueAt > overdueAfterMs(opts.lockDurationMs) ? { state: 'overdue', dueAt } : { state: 'queued' };
    }
    default:
      return { state: 'queued' };
  }
}
