import { z } from 'zod';

/**
 * Every background job the runtime knows: its queue, its validated payload and
 * how its id derives from the entity and the transition. Because ids are
 * derived, enqueueing the same work twice (API retry, reconciler) is a no-op
 * while the first job is still queued or running.
 */
const uuid = z.uuid();
const sid = z.string().min(1).max(63);

export const JOBS = {
  'command.run': {
    queue: 'commands',
    attempts: 5,
    schema: z.strictObject({ cid: uuid, sid }),
    id: (d: { cid: string }) => `command.${d.cid}.run`,
  },
  'preview.render': {
    queue: 'previews',
    // a file that fails three times (corrupt, encrypted, too slow) is recorded as unpreviewable
    attempts: 3,
    schema: z.strictObject({ sid, uuid, version: z.string().regex(/^[A-Za-z0-9_-]{1,80}$/) }),
    id: (d: { uuid: string; version: string }) => `preview.${d.uuid}.${d.version}`,
  },
  // one job per chunk of a task run's items (queues.taskItemsPerJob): a 1,000-item task is tens of jobs, not a thousand
  'task.items': {
    queue: 'tasks',
    attempts: 5,
    schema: z.strictObject({ sid, tid: uuid, run: z.int().min(1), chunk: z.int().min(0) }),
    id: (d: { tid: string; run: number; chunk: number }) => `task.${d.tid}.${d.run}.${d.chunk}`,
  },
  // a connector's action hook (print jobs held, released, canceled with their task), owed since the action
  // numbered `n` committed (tasks.hook_due, migration 028): applies the hook of the task's present status
  'task.hook': {
    queue: 'tasks',
    attempts: 5,
    schema: z.strictObject({ sid, tid: uuid, n: z.int().min(1) }),
    id: (d: { tid: string; n: number }) => `task.hook.${d.tid}.${d.n}`,
  },
  'print.dispatch': {
    queue: 'print',
    // the handler (the dispatch engine) keeps its own retry state in print_jobs
    attempts: 5,
    // one job per printer: "this printer may have work"; the handler drains its queue
    schema: z.strictObject({ printer: z.string().min(1).max(200) }),
    // its id never changes, so its failures are the printer's (outages, crashes), not a piece of work's: never abandoned for them
    perResource: true,
    // printer names are any Unicode: encoded so the id holds no ':' or spaces
    id: (d: { printer: string }) => `print.dispatch.${encodeURIComponent(d.printer)}`,
  },
  // a print job with a task reference changed (written by migration 021's trigger in the changing statement):
  // its state is reported to the task item; `n` numbers the change, so a change never merges into a report
  // already running (the handler reports the job as it is when it runs)
  'print.task-report': {
    queue: 'tasks',
    attempts: 5,
    schema: z.strictObject({
      job: z.string().regex(/^[1-9][0-9]{0,18}$/), n: z.int().min(0), sid, tid: uuid, item: uuid, run: z.int().min(0),
      // the job was deleted before it ended
      gone: z.boolean(),
    }),
    id: (d: { job: string; n: number }) => `print.task-report.${d.job}.${d.n}`,
  },
  'housekeeping.run': {
    queue: 'housekeeping',
    attempts: 1,
    schema: z.strictObject({}),
    id: () => 'housekeeping',
  },
} as const;

export type JobName = keyof typeof JOBS;
export type JobData<N extends JobName> = z.infer<(typeof JOBS)[N]['schema']>;
export type QueueName = (typeof JOBS)[JobName]['queue'];
export const QUEUE_NAMES = [...new Set(Object.values(JOBS).map((j) => j.queue))] as QueueName[];

/**
 * Whether a job is a resource's long-lived job (one id for the life of the
 * resource, such as a printer's dispatch): the reconciler re-creates it
 * whenever it failed and never abandons it for how often that happened.
 */
export const isPerResource = (name: JobName): boolean => 'perResource' in JOBS[name] && JOBS[name].perResource === true;

export function jobIdFor<N extends JobName>(name: N, data: JobData<N>): string {
  return (JOBS[name].id as (d: JobData<N>) => string)(data);
}

/** Validates a payload on entry (enqueue) and on exit (worker); throws InvalidJobError. */
export function parseJob<N extends JobName>(name: N, data: unknown): JobData<N> {
  const res = JOBS[name].schema.safeParse(data);
  if (!res.success) throw new InvalidJobError(`invalid ${name} payload: ${res.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return res.data as JobData<N>;
}

export class InvalidJobError extends Error {
  override readonly name = 'InvalidJobError';
}

/** Thrown by a handler when retrying cannot help; the job fails at once. */
export class PermanentJobError extends Error {
  override readonly name = 'PermanentJobError';
}

/**
 * Thrown by a handler whose job should run again later under the same id
 * (a printer to retry after backoff): the job goes back to the queue,
 * delayed by `delayMs`, without counting as a failed attempt. While it waits,
 * enqueueing the same id is a no-op, as for any queued job.
 */
export class RunAgainError extends Error {
  override readonly name = 'RunAgainError';
  /**
   * `localFault`: the cause is this process's (its database cannot be
   * reached), so it takes no more jobs of the queue until the database
   * answers (`WorkerOptions.reachable`): another process that reaches it
   * runs them meanwhile.
   */
  constructor(readonly delayMs: number, message = `run again in ${delayMs} ms`, readonly opts: { localFault?: boolean } = {}) {
    super(message);
  }
}

/** What a handler may do while it runs. */
export interface JobContext {
  readonly attempt: number;
  readonly finalAttempt: boolean;
  /**
   * Aborted when the handler should stop: the job was cancelled
   * (`WorkerPool.cancel`), its lock was lost (another worker
   * may run it now), or the worker is shutting down and the drain period is
   * over. `signal.reason` says which. A handler passes it to fetches and
   * streams, or checks `signal.aborted` between steps, and then throws: the
   * job is retried later (idempotent handlers make that safe).
   */
  readonly signal: AbortSignal;
  progress(value: number | Record<string, unknown>): Promise<void>;
  /**
   * Whether this run still holds its job's lock in Redis (renewing it when
   * so): false once another worker may run the job (taken over from a worker
   * that read dead, or a lock that lapsed), before the signal says so (the
   * lock is renewed only every half lock period). Absent where no queue
   * runs the handler (a direct call): the run is the only one.
   */
  holdsLock?(): Promise<boolean>;
}

export type JobHandler<N extends JobName> = (data: JobData<N>, ctx: JobContext) => Promise<void>;
export type JobHandlers = { [N in JobName]?: JobHandler<N> };
