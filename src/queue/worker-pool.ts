import { Redis } from 'ioredis';
import { DelayedError, Worker, UnrecoverableError, type Job } from 'bullmq';
import {
  JOBS, QUEUE_NAMES, parseJob, InvalidJobError, PermanentJobError, RunAgainError,
  type JobContext, type JobHandlers, type JobName, type QueueName,
} from './jobs.js';
import { DEFAULT_LOCK_MS, MAX_STALLED_COUNT, connectionOf, outageLogger, within, writePerTurn, type QueueOptions } from './redis-connection.js';

/**
 * The workers of one process. Each handler gets an `AbortSignal` in its
 * context, aborted when the job is cancelled (`cancel`), its lock is lost (so
 * another worker may take it over), or the pool closes and the job is still
 * running after the drain period.
 */
export interface WorkerPool {
  /**
   * Asks the handler of a job running in this process to stop (its signal is
   * aborted with `reason`); false when this process does not run it. (Task
   * pause and abort interrupt items, not jobs: `areas/tasks/actions/item-interrupts.ts`.)
   */
  cancel(jobId: string, reason?: string): boolean;
  /** Lets running jobs finish (up to `timeoutMs`), aborts the rest, then stops. */
  close(timeoutMs?: number): Promise<void>;
}

/** What one attempt came to (metrics). */
export type JobOutcome = 'completed' | 'failed' | 'retried';

export interface WorkerOptions extends QueueOptions {
  /** The workers start once this resolves (the queue's `bound()`: the prefix is this deployment's); never if it rejects. */
  ready?: Promise<void>;
  /** Jobs run at once per queue: a number for every queue, or per queue with a `default`. */
  concurrency: number | ConcurrencyMap;
  /**
   * The workers' name, which BullMQ writes on every job they start
   * (`processedBy`): the process's liveness identity (src/worker/liveness-store.ts),
   * so that a run of a worker proven dead can be taken over (`JobQueue.running`).
   * Asked once, when the workers start (after `ready`).
   */
  name?: () => string | undefined;
  /** Called after every attempt (metrics). */
  onOutcome?: (queue: QueueName, name: string, outcome: JobOutcome) => void;
  /**
   * Whether this process reaches its database (a ping). After a job ran
   * again for a fault of this process (`RunAgainError` with `localFault`),
   * its queue's worker takes no job until this answers true (asked every
   * `HOLD_POLL_MS`): a worker cut off from PostgreSQL would otherwise take
   * the delayed job back each time it is due, before a process that can run it.
   */
  reachable?: () => Promise<boolean>;
}

/** How often a worker held for a fault of its own asks whether the fault is gone. */
const HOLD_POLL_MS = 500;

/** Concurrency per queue name; queues not named take `default`. */
export type ConcurrencyMap = { default: number } & Partial<Record<QueueName, number>>;

const concurrencyOf = (c: number | ConcurrencyMap, queue: QueueName): number =>
  typeof c === 'number' ? c : (c[queue] ?? c.default);

/** Starts one BullMQ worker per queue that has handlers; payloads are validated before handlers see them. */
export function startWorkers(handlers: JobHandlers, opts: WorkerOptions): WorkerPool {
  const workers: Worker[] = [];
  const lockDuration = opts.lockDurationMs ?? DEFAULT_LOCK_MS;
  let closed = false;
  // the handlers running in this process: a close returns only once they have ended (or a bound passed)
  const running = new Set<Promise<unknown>>();
  // queues whose worker takes no job until this process reaches its database again (`reachable`)
  const held = new Set<QueueName>();
  const holdUntilReachable = async (queue: QueueName, worker: Worker): Promise<void> => {
    const reachable = opts.reachable;
    if (!reachable || held.has(queue) || closed) return;
    held.add(queue);
    opts.log.warn({ queue }, 'this process cannot reach its database: it takes no job of this queue until it can (other processes run them)');
    try {
      await worker.pause(true);
      while (!closed) {
        await new Promise((r) => setTimeout(r, HOLD_POLL_MS).unref());
        const answered = await Promise.race([
          reachable().catch(() => false),
          new Promise<boolean>((r) => setTimeout(() => r(false), 5 * HOLD_POLL_MS).unref()),
        ]);
        if (answered) break;
      }
    } finally {
      held.delete(queue);
      if (!closed) {
        await worker.resume();
        opts.log.info({ queue }, 'this process reaches its database again: it takes jobs of this queue');
      }
    }
  };
  const startAll = () => {
    const name = opts.name?.();
    for (const queue of QUEUE_NAMES) {
      const names = (Object.keys(JOBS) as JobName[]).filter((n) => JOBS[n].queue === queue && handlers[n]);
      if (names.length === 0) continue;
      // three parameters: BullMQ then gives each job an AbortSignal (cancelJob, cancelAllJobs)
      const processor = async (job: Job, token: string | undefined, signal: AbortSignal | undefined) => {
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
          const run = handler(data, {
            attempt: job.attemptsMade + 1,
            finalAttempt: job.attemptsMade + 1 >= attempts,
            signal: signal ?? new AbortController().signal,
            progress: (value: number | Record<string, unknown>) => job.updateProgress(value),
            holdsLock: async () => token !== undefined && (await job.extendLock(token, lockDuration)) === 1,
          });
          running.add(run);
          try {
            await run;
          } finally {
            running.delete(run);
          }
        } catch (err) {
          if (err instanceof PermanentJobError) throw new UnrecoverableError(err.message);
          if (err instanceof RunAgainError && token) {
            // BullMQ's way to run a job later: move it to delayed, then tell the worker it was not a failure
            await job.moveToDelayed(Date.now() + Math.max(0, err.delayMs), token);
            if (err.opts.localFault) void holdUntilReachable(queue, worker).catch((e: unknown) => opts.log.warn({ err: e, queue }, 'holding the worker failed'));
            throw new DelayedError();
          }
          throw err;
        }
      };
      const worker = new Worker(queue, processor, {
        connection: connectionOf(opts.url), prefix: opts.prefix, concurrency: concurrencyOf(opts.concurrency, queue), autorun: true, name,
        lockDuration, stalledInterval: lockDuration, maxStalledCount: MAX_STALLED_COUNT,
      });
      // jobs that finish together (one shared final-report statement) hand their moveToFinished to Redis in one write
      worker.getBackend().client.then((client) => {
        if (client instanceof Redis) writePerTurn(client);
      }, () => undefined);
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
  };
  // a worker takes jobs the moment it connects: none before the prefix is known to be this deployment's
  if (opts.ready) opts.ready.then(() => closed || startAll(), () => undefined);
  else startAll();
  return {
    cancel: (jobId, reason = 'cancelled') => workers.some((w) => w.cancelJob(jobId, reason)),
    // Worker.close() waits for running jobs to finish: drain before Redis goes away.
    // Bounded, so that a Redis that is gone cannot hold the shutdown forever; jobs
    // still running then are asked to stop (their signal) and given a moment.
    close: async (timeoutMs = 20_000) => {
      closed = true;
      await Promise.all(workers.map(async (w) => {
        await within(w.close(), timeoutMs);
        w.cancelAllJobs('shutdown');
        await within(w.close(true), 1000); // no-op when the graceful close finished
      }));
      // a forced close does not wait for the handlers it cancelled: they are waited for here (bounded,
      // as a handler may ignore its signal), so that nothing of a job writes after the pool closed
      if (running.size > 0) await within(Promise.allSettled([...running]), 5000);
    },
  };
}
