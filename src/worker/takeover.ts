import { performance } from 'node:perf_hooks';
import type { Services } from '../runtime/services.js';
import { JOBS, isPerResource, type JobName } from '../queue/jobs.js';
import type { RunningJob } from '../queue/job-queue.js';
import { HELD_LOCK_RETAKE_MAX_MS } from '../storage/driver/database.js';
import { WORKER_IDENTITY_PREFIX, deadWorkers } from './liveness-store.js';

/**
 * How long a worker's liveness lock must read free, at every pass, before
 * the worker counts as dead: five times the longest pause of a live holder
 * that lost its connection before it tries again (a database restart ends
 * every session; the holders take their locks back within about a second
 * of the return), and at least two periods.
 */
export const confirmDeadMs = (intervalMs: number) => Math.max(2 * intervalMs, 5 * HELD_LOCK_RETAKE_MAX_MS);

/** The long-lived per-resource jobs (a printer's dispatch): a crashed worker's stop them all until taken over. */
const PER_RESOURCE = (Object.keys(JOBS) as JobName[]).filter(isPerResource);

/**
 * The reconciler's quick repair for one case: a long-lived per-resource job
 * (`perResource`: a printer's `print.dispatch`) left active in BullMQ by a
 * worker process that is proven dead. Without it the job stays active until
 * its BullMQ lock lapses and a stall check moves it (one to two
 * `queues.lockDurationMs`: every printer of the dead worker stops for about
 * a minute).
 *
 * Proof of death, never a guess from time: the run's worker (BullMQ's
 * `processedBy`, the process's liveness identity) holds no liveness lock in
 * PostgreSQL (`deadWorkers`) at every pass for `confirmMs` (at least two
 * passes), so that a database restart, after which live workers take their
 * locks back within about a second, displaces nobody whose witness came
 * back. A slow or stopped (SIGSTOP)
 * process keeps its lock and is never displaced. Only named runs of this
 * runtime's workers are judged (`WORKER_IDENTITY_PREFIX`), never this
 * process's own.
 *
 * The job is moved back to waiting under the lock token read with its worker
 * (`JobQueue.requeueRun`), so a job that another worker started meanwhile
 * is left alone; the next run's own recovery ends a job left in flight
 * "delivery uncertain", as after any crash.
 *
 * Each call is one pass; the caller keeps the returned function and calls
 * it every `queues.takeoverIntervalMs`. Passes of several processes may
 * overlap: a run is moved once (the token check).
 */
export function takeoverPass(s: Services, me: string, confirmMs = confirmDeadMs(s.config.queues.takeoverIntervalMs)): () => Promise<number> {
  // identities found dead at every pass since (monotonic ms): a pass that finds one alive forgets it
  let suspects = new Map<string, number>();
  return async () => {
    const runs = (await s.queue.running(PER_RESOURCE))
      .filter((r): r is RunningJob & { worker: string } => r.worker !== undefined && r.worker !== me && r.worker.startsWith(WORKER_IDENTITY_PREFIX));
    const dead = await deadWorkers(s.db, [...new Set(runs.map((r) => r.worker))]);
    const now = performance.now();
    const proven = dead.filter((w) => suspects.has(w) && now - suspects.get(w)! >= confirmMs);
    suspects = new Map(dead.map((w) => [w, suspects.get(w) ?? now]));
    let moved = 0;
    for (const run of runs) {
      if (!proven.includes(run.worker)) continue;
      try {
        if (!(await s.queue.requeueRun(run))) continue;
        moved += 1;
        s.log.warn({ job: run.id, worker: run.worker }, 'took over a job of a dead worker (its liveness lock is free): queued again at once');
      } catch (err) {
        s.log.warn({ err, job: run.id, worker: run.worker }, 'takeover of a dead worker\'s job failed; going on with the rest');
      }
    }
    return moved;
  };
}
