import type { Services } from '../runtime/services.js';
import type { Area } from '../areas/area.js';

const BATCH = 1000;

/**
 * Redis holds queues only; PostgreSQL is the truth. The reconciler enqueues
 * every piece of work the database says is pending, as each area reports it
 * (commands not final, documents whose preview is missing for their current
 * content, ...). Job ids derive from entity and transition, so enqueueing
 * work that is still queued is a no-op.
 */
export async function reconcile(s: Services, areas: readonly Area[]): Promise<Record<string, number>> {
  // jobs committed while no relay ran (or whose notification was lost) go first
  s.relay.wake();
  const counts: Record<string, number> = {};
  for (const area of areas) {
    if (!area.pending) continue;
    const jobs = await area.pending(s, BATCH);
    for (const job of jobs) await s.queue.enqueue(job.name, job.data as never);
    if (jobs.length > 0) counts[area.name] = jobs.length;
  }
  if (Object.keys(counts).length > 0) s.log.info(counts, 'reconciled pending work into the queues');
  return counts;
}
