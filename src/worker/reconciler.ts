import type { Services } from '../runtime/services.js';
import type { Area, PendingJob } from '../areas/area.js';
import { InvalidJobError, isPerResource, jobIdFor } from '../queue/jobs.js';
import { countRecreation, forgetRecreations } from './recreation-store.js';

const BATCH = 1000;

type Action = 'enqueued' | 'promoted' | 'recreated' | 'abandoned' | 'failed';

/** What one pass did, per area and action (`failed`: repairs that threw); only non-zero counts appear. */
export type ReconcileCounts = Record<string, Partial<Record<Action, number>>>;

/**
 * Redis holds queues only; PostgreSQL is the truth. For every row an area
 * reports as pending, the reconciler asks the queue about the job derived from
 * it and repairs what cannot finish on its own:
 *
 * - missing (Redis wiped, or the job ended while the row stayed pending): enqueue;
 * - queued, or running under a live lock: nothing;
 * - delayed and long overdue (no worker promoted it: a missed wake-up):
 *   promote it (to waiting, with a wake-up for the workers);
 * - failed past its attempts, failed by BullMQ after too many stalls, completed
 *   while the row is pending, or active without a lock (its worker died):
 *   remove and enqueue afresh, counted per job in `job_recreations`; past
 *   `queues.maxRecreations` the row is failed instead (`Area.abandon`);
 * - failed for good (payload invalid, `UnrecoverableError`): `abandon` at once.
 *
 * A resource's long-lived job (`isPerResource`: a printer's dispatch, whose
 * id never changes) is never abandoned for its re-creations: outages and
 * crashes fail it again and again over the resource's life. It is counted
 * per subject (what the resource is working on) and re-created every time;
 * past `queues.maxRecreations` on one subject the area says so on the
 * resource (`Area.failing`). A permanent failure abandons its subject, and
 * the job is re-created for the rest.
 *
 * One repair that throws does not stop the pass: it is logged, counted
 * (`reconcile_repair_failures_total`) and the pass goes on.
 *
 * Every step is idempotent, so several worker processes may reconcile at once.
 */
export async function reconcile(s: Services, areas: readonly Area[]): Promise<ReconcileCounts> {
  // jobs committed while no relay ran (or whose notification was lost) go first
  s.relay.wake();
  const counts: ReconcileCounts = {};
  const count = (area: string, action: Action) => {
    const c = (counts[area] ??= {});
    c[action] = (c[action] ?? 0) + 1;
  };
  for (const area of areas) {
    if (!area.pending) continue;
    for (const job of await area.pending(s, BATCH)) {
      let action: Action | undefined;
      try {
        action = await repair(s, area, job);
      } catch (err) {
        action = 'failed';
        s.metrics.reconcileRepairFailures.inc({ area: area.name });
        s.log.warn({ err, area: area.name, job: job.name, data: job.data }, 'reconcile: repair failed; going on with the rest');
      }
      if (action) count(area.name, action);
    }
  }
  await forgetRecreations(s.db);
  if (Object.keys(counts).length > 0) s.log.info({ reconciled: counts }, 'reconciled pending work with the queues');
  return counts;
}

async function repair(s: Services, area: Area, job: PendingJob): Promise<Action | undefined> {
  const perResource = isPerResource(job.name);
  const abandon = async (reason: string, valid = true) => {
    if (!area.abandon) return undefined; // an area without the hook keeps its row; the job stays failed
    await area.abandon(s, job, reason);
    s.log.warn({ area: area.name, job: job.name, data: job.data, subject: job.subject, reason }, 'pending work abandoned');
    // the resource's other work goes on under the same job
    if (perResource && valid) await s.queue.recreate(job.name, job.data as never);
    return 'abandoned' as const;
  };
  let status;
  try {
    status = await s.queue.inspect(job.name, job.data as never);
  } catch (err) {
    if (err instanceof InvalidJobError) return abandon(err.message, false); // the row itself cannot make a valid job
    throw err;
  }
  switch (status.state) {
    case 'missing':
      await s.queue.enqueue(job.name, job.data as never);
      return 'enqueued';
    case 'queued':
    case 'running':
      return undefined;
    case 'overdue':
      if (!(await s.queue.promote(job.name, job.data as never))) return undefined;
      s.log.warn({ area: area.name, job: job.name, data: job.data, dueAt: new Date(status.dueAt).toISOString() }, 'reconcile: a delayed job was long overdue; promoted');
      return 'promoted';
    case 'failed':
      if (status.why === 'permanent') return abandon(status.reason);
      break;
  }
  const id = jobIdFor(job.name, job.data as never);
  const n = await countRecreation(s.db, perResource && job.subject ? `${id}@${job.subject}` : id, status.instance, status.reason);
  if (n === undefined) return undefined; // this run of the job was counted (and is being replaced) already
  if (n > s.config.queues.maxRecreations) {
    const reason = `${status.reason} (re-created ${n - 1} times)`;
    if (!perResource) return abandon(reason);
    s.log.warn({ area: area.name, job: job.name, data: job.data, subject: job.subject, reason }, 'a long-lived job keeps failing; re-created again');
    await area.failing?.(s, job, reason);
  }
  return (await s.queue.recreate(job.name, job.data as never)) ? 'recreated' : undefined;
}
