import type { Services } from '../runtime/services.js';
import type { Area, PendingJob } from '../areas/area.js';
import { InvalidJobError, jobIdFor } from '../queue/jobs.js';
import { countRecreation, forgetRecreations } from './recreation-store.js';

const BATCH = 1000;

/** What one pass did, per area and action; only non-zero counts appear. */
export type ReconcileCounts = Record<string, Partial<Record<'enqueued' | 'recreated' | 'abandoned', number>>>;

/**
 * Redis holds queues only; PostgreSQL is the truth. For every row an area
 * reports as pending, the reconciler asks the queue about the job derived from
 * it and repairs what cannot finish on its own:
 *
 * - missing (Redis wiped, or the job ended while the row stayed pending): enqueue;
 * - queued, or running under a live lock: nothing;
 * - failed past its attempts, failed by BullMQ after too many stalls, completed
 *   while the row is pending, or active without a lock (its worker died):
 *   remove and enqueue afresh, counted per job in `job_recreations`; past
 *   `queues.maxRecreations` the row is failed instead (`Area.abandon`);
 * - failed for good (payload invalid, `UnrecoverableError`): `abandon` at once.
 *
 * Every step is idempotent, so several worker processes may reconcile at once.
 */
export async function reconcile(s: Services, areas: readonly Area[]): Promise<ReconcileCounts> {
  // jobs committed while no relay ran (or whose notification was lost) go first
  s.relay.wake();
  const counts: ReconcileCounts = {};
  for (const area of areas) {
    if (!area.pending) continue;
    for (const job of await area.pending(s, BATCH)) {
      const action = await repair(s, area, job);
      if (action) {
        const c = (counts[area.name] ??= {});
        c[action] = (c[action] ?? 0) + 1;
      }
    }
  }
  await forgetRecreations(s.db);
  if (Object.keys(counts).length > 0) s.log.info({ reconciled: counts }, 'reconciled pending work with the queues');
  return counts;
}

async function repair(s: Services, area: Area, job: PendingJob): Promise<'enqueued' | 'recreated' | 'abandoned' | undefined> {
  const abandon = async (reason: string) => {
    if (!area.abandon) return undefined; // an area without the hook keeps its row; the job stays failed
    await area.abandon(s, job, reason);
    s.log.warn({ area: area.name, job: job.name, data: job.data, reason }, 'pending work abandoned');
    return 'abandoned' as const;
  };
  let status;
  try {
    status = await s.queue.inspect(job.name, job.data as never);
  } catch (err) {
    if (err instanceof InvalidJobError) return abandon(err.message); // the row itself cannot make a valid job
    throw err;
  }
  switch (status.state) {
    case 'missing':
      await s.queue.enqueue(job.name, job.data as never);
      return 'enqueued';
    case 'queued':
    case 'running':
      return undefined;
    case 'failed':
      if (status.why === 'permanent') return abandon(status.reason);
      break;
  }
  const n = await countRecreation(s.db, jobIdFor(job.name, job.data as never), status.instance, status.reason);
  if (n === undefined) return undefined; // this run of the job was counted (and is being replaced) already
  if (n > s.config.queues.maxRecreations) return abandon(`${status.reason} (re-created ${n - 1} times)`);
  return (await s.queue.recreate(job.name, job.data as never)) ? 'recreated' : undefined;
}
