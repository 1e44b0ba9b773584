import { Queue, Worker, UnrecoverableError, type Job, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import { CronExpressionParser } from 'cron-parser';
import type { Logger } from '../logging/logger.js';
import { jobStatus, type JobStatus } from './job-status.js';
import {
  JOBS, QUEUE_NAMES, jobIdFor, parseJob, InvalidJobError, PermanentJobError,
  type JobContext, type JobData, type JobHandlers, type JobName, type QueueName,
} from './jobs.js';

export type { JobStatus } from './job-status.js';

/** When a scheduled job runs: a cron pattern (5 or 6 fields, seconds first; optional time zone) or a fixed interval. */
export type Schedule = { cron: string; tz?: string } | { everyMs: number };

/** The only module that imports bullmq; the rest of the runtime sees these interfaces. */
export interface JobQueue {
  /** Validates and enqueues; the job id derives from the payload (idempotent). */
  enqueue<N extends JobName>(name: N, data: JobData<N>, opts?: { delayMs?: number }): Promise<string>;
  /** Where the job derived from this payload stands (reconciler). */
  inspect<N extends JobName>(name: N, data: JobData<N>): Promise<JobStatus>;
  /**
   * Removes whatever job holds the derived id (failed, completed, stalled) and
   * enqueues it afresh, with all its attempts. False when the job is locked by
   * a live worker after all (nothing changed).
   */
  recreate<N extends JobName>(name: N, data: JobData<N>): Promise<boolean>;
  /**
   * Runs `name` with `data` on the schedule, on one worker of the fleet (a
   * BullMQ job scheduler whose id is the derived job id: scheduling the same
   * payload again replaces its schedule).
   */
  schedule<N extends JobName>(name: N, data: JobData<N>, when: Schedule): Promise<void>;
  /** Removes the schedule `schedule(name, data, …)` made; false when there was none. */
  unschedule<N extends JobName>(name: N, data: JobData<N>): Promise<boolean>;
  /** Waiting/active/delayed/failed counts per queue (metrics; waits on Redis, so callers bound it). */
  depths(): Promise<Record<QueueName, Record<string, number>>>;
  /** Round trip to Redis; fails at once when not connected (never queues). */
  ping(): Promise<void>;
  /** Whether the connection to Redis is up now (readiness, without a round trip). */
  connected(): boolean;
  close(): Promise<void>;
}

/**
 * The workers of one process. Each handler gets an `AbortSignal` in its
 * context, aborted when the job is cancelled (`cancel`), its lock is lost (so
 * another worker may take it over), or the pool closes and the job is still
 * running after the drain period.
 */
export interface WorkerPool {
  /**
   * Asks the handler of a job running in this process to stop (its signal is
   * aborted with `reason`); false when this process does not run it. A fleet-wide
   * cancel (task abort) publishes the job id to every pool, which calls this.
   */
  cancel(jobId: string, reason?: string): boolean;
  /** Lets running jobs finish (up to `timeoutMs`), aborts the rest, then stops. */
  close(timeoutMs?: number): Promise<void>;
}

/** Thrown by `schedule` for a pattern or interval BullMQ refuses. */
export class InvalidScheduleError extends Error {
  override readonly name = 'InvalidScheduleError';
}

/** Resolves with the promise, or after `ms` (a close must not hang on a Redis that is gone). */
const within = (p: Promise<unknown>, ms: number): Promise<unknown> =>
  Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);

/** Logs a connection error once per outage instead of on every retry. */
function outageLogger(log: Logger, what: Record<string, unknown>) {
  let down = false;
  return {
    error(err: Error) {
      if (down) return;
      down = true;
      log.warn({ err, ...what }, 'Redis connection lost; retrying');
    },
    ready() {
      if (down) log.info(what, 'Redis connection back');
      down = false;
    },
  };
}

export type JobOutcome = 'completed' | 'failed' | 'retried';

export interface QueueOptions {
  url: string;
  prefix: string;
  log: Logger;
  /** How long a job's lock lives without renewal (BullMQ `lockDuration`); default 30 s. */
  lockDurationMs?: number;
}

/**
 * Stalls (a worker died holding the job) allowed before BullMQ fails a job.
 * BullMQ's default of 1 fails every job that was running when a worker was
 * killed twice in a row (a crash-looping deploy), while its row stays pending.
 * Handlers are idempotent, so re-running a stalled job is safe; the limit only
 * has to stop a job that kills its worker every time, and the reconciler
 * re-creates such a job a bounded number of times before it gives the row up.
 */
export const MAX_STALLED_COUNT = 3;
const DEFAULT_LOCK_MS = 30_000;

const DEFAULT_JOB_OPTS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  // Completed jobs are dropped so that the reconciler can enqueue the same id again.
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
};

/** Checks the schedule before Redis sees it, with the cron parser BullMQ itself uses. */
function repeatOf(when: Schedule): { pattern: string; tz?: string } | { every: number } {
  if ('everyMs' in when) {
    if (!Number.isInteger(when.everyMs) || when.everyMs < 1) throw new InvalidScheduleError(`everyMs must be a positive integer, not ${when.everyMs}`);
    return { every: when.everyMs };
  }
  try {
    CronExpressionParser.parse(when.cron, { tz: when.tz }).next(); // next() checks the time zone too
  } catch (err) {
    throw new InvalidScheduleError(`invalid cron pattern "${when.cron}": ${(err as Error).message}`);
  }
  return { pattern: when.cron, tz: when.tz };
}

function connectionOf(url: string): ConnectionOptions {
  return { url, maxRetriesPerRequest: null, enableOfflineQueue: true };
}

export function createJobQueue(opts: QueueOptions): JobQueue {
  const queues = new Map<QueueName, Queue>();
  const queueFor = (name: QueueName): Queue => {
    let q = queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: connectionOf(opts.url), prefix: opts.prefix, defaultJobOptions: DEFAULT_JOB_OPTS });
      const outage = outageLogger(opts.log, { queue: name });
      q.on('error', (err) => outage.error(err));
      void q.waitUntilReady().then(() => outage.ready(), () => undefined);
      queues.set(name, q);
    }
    return q;
  };
  // Kept connected (reconnecting on its own) so readiness reads its state; no
  // offline queue, so a command while Redis is down fails at once instead of waiting.
  const pinger = new Redis(opts.url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2000 });
  pinger.on('error', () => {});
  const statusOpts = { lockDurationMs: opts.lockDurationMs ?? DEFAULT_LOCK_MS };
  const add = async (name: JobName, payload: unknown, jobId: string, delay?: number) => {
    await queueFor(JOBS[name].queue).add(name, payload, { jobId, delay, attempts: JOBS[name].attempts });
  };
  return {
    async enqueue(name, data, enqueueOpts) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      await add(name, payload, jobId, enqueueOpts?.delayMs);
      return jobId;
    },
    async inspect(name, data) {
      const q = queueFor(JOBS[name].queue);
      const jobId = jobIdFor(name, parseJob(name, data));
      const job = await q.getJob(jobId);
      return jobStatus(job, async () => (await pinger.exists(`${q.toKey(jobId)}:lock`)) === 1, statusOpts);
    },
    async recreate(name, data) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      // 0 = locked by a live worker (or one of its dependencies is): leave it alone
      if ((await queueFor(JOBS[name].queue).remove(jobId)) === 0 && (await queueFor(JOBS[name].queue).getJob(jobId))) return false;
      await add(name, payload, jobId);
      return true;
    },
    async schedule(name, data, when) {
      const payload = parseJob(name, data);
      await queueFor(JOBS[name].queue).upsertJobScheduler(jobIdFor(name, payload), repeatOf(when), { name, data: payload });
    },
    async unschedule(name, data) {
      const payload = parseJob(name, data);
      return queueFor(JOBS[name].queue).removeJobScheduler(jobIdFor(name, payload));
    },
    async depths() {
      const out = {} as Record<QueueName, Record<string, number>>;
      for (const name of QUEUE_NAMES) {
        out[name] = await queueFor(name).getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
      }
      return out;
    },
    async ping() {
      await pinger.ping();
    },
    connected: () => pinger.status === 'ready',
    async close() {
      await Promise.all([...queues.values()].map((q) => within(q.close(), 5000)));
      pinger.disconnect();
    },
  };
}

export interface WorkerOptions extends QueueOptions {
  /** Jobs run at once per queue: a number for every queue, or per queue with a `default`. */
  concurrency: number | ConcurrencyMap;
  /** Called after every attempt (metrics). */
  onOutcome?: (queue: QueueName, name: string, outcome: JobOutcome) => void;
}

/** Concurrency per queue name; queues not named take `default`. */
export type ConcurrencyMap = { default: number } & Partial<Record<QueueName, number>>;

const concurrencyOf = (c: number | ConcurrencyMap, queue: QueueName): number =>
  typeof c === 'number' ? c : (c[queue] ?? c.default);

/** Starts one BullMQ worker per queue that has handlers; payloads are validated before handlers see them. */
export function startWorkers(handlers: JobHandlers, opts: WorkerOptions): WorkerPool {
  const workers: Worker[] = [];
  const lockDuration = opts.lockDurationMs ?? DEFAULT_LOCK_MS;
  for (const queue of QUEUE_NAMES) {
    const names = (Object.keys(JOBS) as JobName[]).filter((n) => JOBS[n].queue === queue && handlers[n]);
    if (names.length === 0) continue;
    // three parameters: BullMQ then gives each job an AbortSignal (cancelJob, cancelAllJobs)
    const processor = async (job: Job, _token: string | undefined, signal: AbortSignal | undefined) => {
      const name = job.name as JobName;
      const handler = handlers[name] as ((d: unknown, c: JobContext) => Promise<void>) | undefined;
      if (!handler) throw new UnrecoverableError(`no handler for job ${job.name}`);
      let data: unknown;
      try {
        data = parseJob(name, job.data);
      } catch (err) {
        if (err instanceof InvalidJobError) throw new UnrecoverableError(err.message);
        throw err;
      }
      const attempts = job.opts.attempts ?? 1;
      try {
        await handler(data, {
          attempt: job.attemptsMade + 1,
          finalAttempt: job.attemptsMade + 1 >= attempts,
          signal: signal ?? new AbortController().signal,
          progress: (value: number | Record<string, unknown>) => job.updateProgress(value),
        });
      } catch (err) {
        if (err instanceof PermanentJobError) throw new UnrecoverableError(err.message);
        throw err;
      }
    };
    const worker = new Worker(queue, processor, {
      connection: connectionOf(opts.url), prefix: opts.prefix, concurrency: concurrencyOf(opts.concurrency, queue), autorun: true,
      lockDuration, stalledInterval: lockDuration, maxStalledCount: MAX_STALLED_COUNT,
    });
    worker.on('completed', (job) => opts.onOutcome?.(queue, job.name, 'completed'));
    worker.on('failed', (job, err) => {
      if (!job) return;
      const final = job.attemptsMade >= (job.opts.attempts ?? 1) || err instanceof UnrecoverableError;
      opts.onOutcome?.(queue, job.name, final ? 'failed' : 'retried');
      opts.log[final ? 'error' : 'warn']({ err, queue, job: job.id, attempt: job.attemptsMade }, final ? 'job failed' : 'job attempt failed; will retry');
    });
    // Another worker may take the job over once its lock is gone: the handler should stop.
    worker.on('lockRenewalFailed', (jobIds: string[]) => {
      for (const id of jobIds) worker.cancelJob(id, 'lock lost');
    });
    const outage = outageLogger(opts.log, { queue, worker: true });
    worker.on('error', (err) => outage.error(err));
    worker.on('ready', () => outage.ready());
    workers.push(worker);
  }
  return {
    cancel: (jobId, reason = 'cancelled') => workers.some((w) => w.cancelJob(jobId, reason)),
    // Worker.close() waits for running jobs to finish: drain before Redis goes away.
    // Bounded, so that a Redis that is gone cannot hold the shutdown forever; jobs
    // still running then are asked to stop (their signal) and given a moment.
    close: async (timeoutMs = 20_000) => {
      await Promise.all(workers.map(async (w) => {
        await within(w.close(), timeoutMs);
        w.cancelAllJobs('shutdown');
        await within(w.close(true), 1000); // no-op when the graceful close finished
      }));
    },
  };
}

/** Removes every key of this prefix's queues (tests, and the reconciler proof). */
export async function obliterateQueues(opts: QueueOptions): Promise<void> {
  for (const name of QUEUE_NAMES) {
    const q = new Queue(name, { connection: connectionOf(opts.url), prefix: opts.prefix });
    await q.obliterate({ force: true }).catch(() => {});
    await q.close();
  }
}
