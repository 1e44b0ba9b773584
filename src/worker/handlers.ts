import type { Services } from '../runtime/services.js';
import type { JobHandlers } from '../queue/jobs.js';
import type { Area } from '../areas/area.js';

/**
 * The job handlers a worker process runs: each area's, plus housekeeping,
 * which runs every area's clean-up step. `stopping` is aborted by the runtime
 * when the worker side begins to stop, `stopped` once the workers have
 * stopped (see `Area.jobs`).
 */
export function jobHandlers(s: Services, areas: readonly Area[], stopped?: AbortSignal, stopping?: AbortSignal): JobHandlers {
  const handlers: JobHandlers = {};
  for (const area of areas) Object.assign(handlers, area.jobs?.(s, stopped, stopping));
  handlers['housekeeping.run'] = async () => {
    const counts: Record<string, number> = {};
    for (const area of areas) Object.assign(counts, await area.housekeeping?.(s));
    if (Object.values(counts).some((n) => n > 0)) s.log.info(counts, 'housekeeping');
  };
  return handlers;
}
