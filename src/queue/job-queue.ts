import { Queue, Worker, UnrecoverableError, type Job, type ConnectionOptions } from 'bullmq';
import { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';
import {
  JOBS, QUEUE_NAMES, jobIdFor, parseJob, InvalidJobError, PermanentJobError,
  type JobData, type JobHandlers, type JobName, type QueueName,
} from './jobs.js';

/** The only module that imports bullmq; the rest of the runtime sees these interfaces. */
export interface JobQueue {
  /**
   * Validates and enqueues; the job id derives from the payload (idempotent).
   * With `timeoutMs`, rejects with `QueueUnavailableError` once that has
   * passed (Redis unreachable) instead of waiting for a reconnect; the add may
   * still land later, which the derived id makes harmless.
   */
  enqueue<N extends JobName>(name: N, data: JobData<N>, opts?: { delayMs?: number; timeoutMs?: number }): Promise<string>;
  /** Runs `name` every `everyMs` on one worker of the fleet (BullMQ job scheduler). */
  schedule<N extends JobName>(name: N, data: JobData<N>, everyMs: number): Promise<void>;
  /** Waiting/active/delayed/failed counts per queue (metrics). */
  depths(): Promise<Record<QueueName, Record<string, number>>>;
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface WorkerPool {
  /** Lets running jobs finish (up to `timeoutMs`), then stops. */
  close(timeoutMs?: number): Promise<void>;
}

/** Resolves with the promise, or after `ms` (a close must not hang on a Redis that is gone). */
const within = (p: Promise<unknown>, ms: number): Promise<unknown> =>
  Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);

/** Redis did not take a job in time (see `JobQueue.enqueue`'s `timeoutMs`). */
export class QueueUnavailableError extends Error {
  override readonly name = 'QueueUnavailableError';
}

/** The promise, or a QueueUnavailableError after `ms`; a late rejection of `p` is owned here. */
function bounded<T>(p: Promise<T>, ms: number): Promise<T> {
  p.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new QueueUnavailableError(`Redis did not take the job within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

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
}

const DEFAULT_JOB_OPTS = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  // Completed jobs are dropped so that the reconciler can enqueue the same id again.
  removeOnComplete: true,
  removeOnFail: { age: 7 * 24 * 3600, count: 10_000 },
};

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
  const pinger = new Redis(opts.url, { maxRetriesPerRequest: 1, lazyConnect: true, enableOfflineQueue: false, connectTimeout: 2000 });
  pinger.on('error', () => {});
  return {
    async enqueue(name, data, enqueueOpts) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      const added = queueFor(JOBS[name].queue).add(name, payload, { jobId, delay: enqueueOpts?.delayMs, attempts: JOBS[name].attempts });
      await (enqueueOpts?.timeoutMs === undefined ? added : bounded(added, enqueueOpts.timeoutMs));
      return jobId;
    },
    async schedule(name, data, everyMs) {
      const payload = parseJob(name, data);
      await queueFor(JOBS[name].queue).upsertJobScheduler(jobIdFor(name, payload), { every: everyMs }, { name, data: payload });
    },
    async depths() {
      const out = {} as Record<QueueName, Record<string, number>>;
      for (const name of QUEUE_NAMES) {
        out[name] = await queueFor(name).getJobCounts('waiting', 'active', 'delayed', 'failed', 'prioritized');
      }
      return out;
    },
    async ping() {
      if (pinger.status === 'wait' || pinger.status === 'end') await pinger.connect().catch(() => {});
      await pinger.ping();
    },
    async close() {
      await Promise.all([...queues.values()].map((q) => within(q.close(), 5000)));
      pinger.disconnect();
    },
  };
}

export interface WorkerOptions extends QueueOptions {
  concurrency: number;
  /** Called after every attempt (metrics). */
  onOutcome?: (queue: QueueName, name: string, outcome: JobOutcome) => void;
}

/** Starts one BullMQ worker per queue that has handlers; payloads are validated before handlers see them. */
export function startWorkers(handlers: JobHandlers, opts: WorkerOptions): WorkerPool {
  const workers: Worker[] = [];
  for (const queue of QUEUE_NAMES) {
    const names = (Object.keys(JOBS) as JobName[]).filter((n) => JOBS[n].queue === queue && handlers[n]);
    if (names.length === 0) continue;
    const worker = new Worker(
      queue,
      async (job: Job) => {
        const name = job.name as JobName;
        const handler = handlers[name] as ((d: unknown, c: unknown) => Promise<void>) | undefined;
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
            progress: (value: number | Record<string, unknown>) => job.updateProgress(value),
          });
        } catch (err) {
          if (err instanceof PermanentJobError) throw new UnrecoverableError(err.message);
          throw err;
        }
      },
      { connection: connectionOf(opts.url), prefix: opts.prefix, concurrency: opts.concurrency, autorun: true },
    );
    worker.on('completed', (job) => opts.onOutcome?.(queue, job.name, 'completed'));
    worker.on('failed', (job, err) => {
      if (!job) return;
      const final = job.attemptsMade >= (job.opts.attempts ?? 1) || err instanceof UnrecoverableError;
      opts.onOutcome?.(queue, job.name, final ? 'failed' : 'retried');
      opts.log[final ? 'error' : 'warn']({ err, queue, job: job.id, attempt: job.attemptsMade }, final ? 'job failed' : 'job attempt failed; will retry');
    });
    const outage = outageLogger(opts.log, { queue, worker: true });
    worker.on('error', (err) => outage.error(err));
    worker.on('ready', () => outage.ready());
    workers.push(worker);
  }
  return {
    // Worker.close() waits for running jobs to finish: drain before Redis goes away.
    // Bounded, so that a Redis that is gone cannot hold the shutdown forever.
    close: async (timeoutMs = 20_000) => {
      await Promise.all(workers.map(async (w) => {
        await within(w.close(), timeoutMs);
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
