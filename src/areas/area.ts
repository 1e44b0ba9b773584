import type Router from '@koa/router';
import type { Services } from '../runtime/services.js';
import type { JobData, JobHandlers, JobName } from '../queue/jobs.js';

/**
 * One piece of queue work the database says is pending (the reconciler
 * enqueues it). `subject`, for a resource's long-lived job (`isPerResource`):
 * what the resource is working on now (a printer's blocking job); the
 * reconciler counts its re-creations per job and subject, so a resource that
 * makes progress between failures starts counting afresh.
 */
export type PendingJob = { [N in JobName]: { name: N; data: JobData<N>; subject?: string } }[JobName];

/**
 * A resource area (repository, commands, tasks, lists, print jobs, ...): one
 * folder holding its routes, schema, presenter, service (no HTTP) and store
 * (all SQL of its tables). It exports what the runtime wires, nothing more:
 *
 * - `v1` / `v3`: a router mounted under the API's parent router, which
 *   authenticates once for everything below it, so no route can be left open
 *   by forgetting a line (open routes live outside the areas);
 * - `jobs`: the handlers of the area's jobs (declared in `src/queue/jobs.ts`);
 *   `stopped` aborts once the process's workers have stopped (cancel timers
 *   the handlers left behind: the database closes next); `stopping` aborts
 *   when the process begins to stop (long runs finish the step in progress
 *   and take nothing new; the job's own signal aborts only when the grace
 *   period is over);
 * - `pending`: reconcile source, the work the database says is pending;
 * - `abandon`: fails a pending row for good, with a reason, when its job
 *   cannot succeed (invalid payload, permanent error, re-created too often);
 *   afterwards `pending` must no longer return it. A resource's long-lived
 *   job is abandoned only for a permanent error, and re-created after;
 * - `failing`: a resource's long-lived job keeps failing on one subject
 *   (re-created past `queues.maxRecreations`); it is re-created again, and
 *   the area says so on the resource (a printer's error);
 * - `housekeeping`: periodic clean-up, run by the `housekeeping.run` job.
 */
export interface Area {
  readonly name: string;
  v1?(s: Services): Router;
  v3?(s: Services): Router;
  jobs?(s: Services, stopped?: AbortSignal, stopping?: AbortSignal): JobHandlers;
  pending?(s: Services, limit: number): Promise<PendingJob[]>;
  abandon?(s: Services, job: PendingJob, reason: string): Promise<void>;
  failing?(s: Services, job: PendingJob, reason: string): Promise<void>;
  housekeeping?(s: Services): Promise<Record<string, number>>;
}
