import { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { CronExpressionParser } from 'cron-parser';
import { jobStatus } from './job-status.js';
import { JOBS, QUEUE_NAMES, jobIdFor, parseJob, type JobData, type JobName, type QueueName } from './jobs.js';
import { DEFAULT_LOCK_MS, connectionOf, connectedWithin, outageLogger, within, type QueueOptions } from './redis-connection.js';
import { bindPrefix } from './prefix-binding.js';

import type { JobStatus } from './job-status.js';
import { queueBoardAdapters, type BaseAdapter } from './queue-board.js';

// The queue's public face, with the workers (worker-pool.ts) as its other half.
export type { JobStatus } from './job-status.js';
export { MAX_STALLED_COUNT, type QueueOptions } from './redis-connection.js';
export { PrefixTakenError } from './prefix-binding.js';
export { startWorkers, type ConcurrencyMap, type JobOutcome, type WorkerOptions, type WorkerPool } from './worker-pool.js';

/** When a scheduled job runs: a cron pattern (5 or 6 fields, seconds first; optional time zone) or a fixed interval. */
export type Schedule = { cron: string; tz?: string } | { everyMs: number };

/** The queue seam: src/queue/ alone imports bullmq and ioredis; the rest of the runtime sees these interfaces. */
export interface JobQueue {
  /**
   * Validates and enqueues; the job id derives from the payload (idempotent).
   * With `timeoutMs`, rejects with `QueueUnavailableError` once that has
   * passed (Redis unreachable) instead of waiting for a reconnect; the add may
   * still land later, which the derived id makes harmless.
   */
  enqueue<N extends JobName>(name: N, data: JobData<N>, opts?: { delayMs?: number; timeoutMs?: number }): Promise<string>;
  /**
   * `enqueue` for a batch: one Redis round trip per queue (BullMQ `addBulk`,
   * a MULTI), all or nothing per queue. Every payload is validated before
   * Redis sees any (`InvalidJobError`). Returns the derived ids in order.
   */
  enqueueMany(jobs: readonly EnqueueRequest[], opts?: { timeoutMs?: number }): Promise<string[]>;
  /** Where the job derived from this payload stands (reconciler). */
  inspect<N extends JobName>(name: N, data: JobData<N>): Promise<JobStatus>;
  /**
   * Removes whatever job holds the derived id (failed, completed, stalled) and
   * enqueues it afresh, with all its attempts. False when the job is locked by
   * a live worker after all (nothing changed).
   */
  recreate<N extends JobName>(name: N, data: JobData<N>): Promise<boolean>;
  /**
   * Moves the delayed job derived from this payload to waiting at once
   * (BullMQ `promote`, which also wakes a worker); false when it is no longer
   * delayed (a worker promoted it meanwhile: nothing changed).
   */
  promote<N extends JobName>(name: N, data: JobData<N>): Promise<boolean>;
  /**
   * The active jobs of these names, each with the worker that runs it
   * (BullMQ's `processedBy`: the worker name, `WorkerOptions.name`) and its
   * lock token, read together in one MULTI (the takeover, src/worker/takeover.ts).
   */
  running(names: readonly JobName[]): Promise<RunningJob[]>;
  /**
   * Moves an active job back to waiting at once, if it is still the run
   * `running` saw (its lock token is unchanged: BullMQ's `moveToWait` under
   * that token), so another worker starts it. Only for a run whose worker is
   * proven dead. False when the job moved on meanwhile (nothing changed).
   */
  requeueRun(run: RunningJob): Promise<boolean>;
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
  /** Calls `cb` each time the connection to Redis is up again after it was lost (not at the first connect). */
  onReconnect(cb: () => void): void;
  /** Every queue as a bull-board adapter, for the admins' queue dashboard (`src/api/admin/`); the queues are this object's own. */
  boardAdapters(opts: { readOnly: boolean }): BaseAdapter[];
  /**
   * Resolves once the prefix is found to be this deployment's (at once without
   * `deployment`); rejects with `PrefixTakenError` when it is another's. Every
   * operation above waits for it, and rejects with it.
   */
  bound(): Promise<void>;
  close(): Promise<void>;
}

/** An active job as `JobQueue.running` saw it. */
export interface RunningJob {
  id: string;
  name: JobName;
  queue: QueueName;
  /** The name of the worker that started this run (undefined: a worker without a name). */
  worker: string | undefined;
  /** The run's lock token (undefined: its lock lapsed; BullMQ's stall check moves it). */
  token: string | undefined;
}

/** One job of `enqueueMany`. */
export type EnqueueRequest = { [N in JobName]: { name: N; data: JobData<N> } }[JobName];

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

/** Thrown by `schedule` for a pattern or interval BullMQ refuses. */
export class InvalidScheduleError extends Error {
  override readonly name = 'InvalidScheduleError';
}

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
  // 'ready' after a 'close': Redis is back (the first 'ready' is the start, not a return)
  let lost = false;
  const reconnected = new Set<() => void>();
  pinger.on('close', () => (lost = true));
  pinger.on('ready', () => {
    if (!lost) return;
    lost = false;
    for (const cb of reconnected) cb();
  });
  const statusOpts = { lockDurationMs: opts.lockDurationMs ?? DEFAULT_LOCK_MS };
  let closed = false;
  const binding = opts.deployment === undefined
    ? Promise.resolve()
    : bindPrefix(pinger, { url: opts.url, prefix: opts.prefix, deployment: opts.deployment, closed: () => closed });
  binding.catch(() => undefined); // owned by every caller of `bound()` and of the operations
  const add = async (name: JobName, payload: unknown, jobId: string, delay?: number) => {
    await binding;
    await queueFor(JOBS[name].queue).add(name, payload, { jobId, delay, attempts: JOBS[name].attempts });
  };
  return {
    async enqueue(name, data, enqueueOpts) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      const added = add(name, payload, jobId, enqueueOpts?.delayMs);
      await (enqueueOpts?.timeoutMs === undefined ? added : bounded(added, enqueueOpts.timeoutMs));
      return jobId;
    },
    async enqueueMany(jobs, enqueueOpts) {
      const byQueue = new Map<QueueName, { name: JobName; data: unknown; opts: { jobId: string; attempts: number } }[]>();
      const ids = jobs.map(({ name, data }) => {
        const payload = parseJob(name, data);
        const jobId = jobIdFor(name, payload);
        const queue = JOBS[name].queue;
        let batch = byQueue.get(queue);
        if (!batch) byQueue.set(queue, (batch = []));
        batch.push({ name, data: payload, opts: { jobId, attempts: JOBS[name].attempts } });
        return jobId;
      });
      const added = binding.then(() => Promise.all([...byQueue].map(([queue, batch]) => queueFor(queue).addBulk(batch))));
      await (enqueueOpts?.timeoutMs === undefined ? added : bounded(added, enqueueOpts.timeoutMs));
      return ids;
    },
    async inspect(name, data) {
      await binding;
      const q = queueFor(JOBS[name].queue);
      const jobId = jobIdFor(name, parseJob(name, data));
      const job = await q.getJob(jobId);
      return jobStatus(job, async () => {
        await connectedWithin(pinger, 5000); // the reconciler's first pass may come before this connection is up
        return (await pinger.exists(`${q.toKey(jobId)}:lock`)) === 1;
      }, {
        ...statusOpts,
        // a delayed job's score is its due time (ms) times 0x1000, plus a counter (BullMQ getDelayedScore)
        dueAt: async () => {
          const score = await pinger.zscore(q.toKey('delayed'), jobId);
          return score === null ? undefined : Math.floor(Number(score) / 0x1000);
        },
      });
    },
    async recreate(name, data) {
      const payload = parseJob(name, data);
      await binding;
      const jobId = jobIdFor(name, payload);
      // 0 = locked by a live worker (or one of its dependencies is): leave it alone
      if ((await queueFor(JOBS[name].queue).remove(jobId)) === 0 && (await queueFor(JOBS[name].queue).getJob(jobId))) return false;
      await add(name, payload, jobId);
      return true;
    },
    async promote(name, data) {
      const payload = parseJob(name, data);
      await binding;
      const job = await queueFor(JOBS[name].queue).getJob(jobIdFor(name, payload));
      if (!job) return false;
      try {
        await job.promote();
        return true;
      } catch (err) {
        // BullMQ refuses a job that is not delayed (any more): someone else moved it
        if (await job.isDelayed()) throw err;
        return false;
      }
    },
    async running(names) {
      await binding;
      const out: RunningJob[] = [];
      for (const queue of new Set(names.map((n) => JOBS[n].queue))) {
        const q = queueFor(queue);
        const ids = await pinger.lrange(q.toKey('active'), 0, -1);
        if (ids.length === 0) continue;
        const multi = pinger.multi();
        for (const id of ids) multi.get(`${q.toKey(id)}:lock`).hmget(q.toKey(id), 'name', 'pb');
        const replies = (await multi.exec()) ?? [];
        ids.forEach((id, i) => {
          const [lockErr, token] = replies[2 * i] ?? [];
          const [hashErr, fields] = replies[2 * i + 1] ?? [];
          if (lockErr || hashErr) return;
          const [name, worker] = fields as (string | null)[];
          if (!name || !names.includes(name as JobName)) return;
          out.push({ id, name: name as JobName, queue, worker: worker ?? undefined, token: (token as string | null) ?? undefined });
        });
      }
      return out;
    },
    async requeueRun(run) {
      if (!run.token) return false;
      await binding;
      const q = queueFor(run.queue);
      const job = await Job.fromId(q, run.id);
      if (!job) return false;
      try {
        await job.moveToWait(run.token);
        return true;
      } catch (err) {
        // refused because the lock is another run's now (or gone): the job moved on; anything else is a failure
        if ((await pinger.get(`${q.toKey(run.id)}:lock`)) !== run.token) return false;
        throw err;
      }
    },
    async schedule(name, data, when) {
      const payload = parseJob(name, data);
      const repeat = repeatOf(when); // a bad schedule is refused before Redis is waited for
      await binding;
      await queueFor(JOBS[name].queue).upsertJobScheduler(jobIdFor(name, payload), repeat, { name, data: payload });
    },
    async unschedule(name, data) {
      const payload = parseJob(name, data);
      await binding;
      return queueFor(JOBS[name].queue).removeJobScheduler(jobIdFor(name, payload));
    },
    async depths() {
      await binding;
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
    onReconnect: (cb) => void reconnected.add(cb),
    boardAdapters: ({ readOnly }) => queueBoardAdapters(QUEUE_NAMES.map(queueFor), readOnly),
    bound: () => binding,
    async close() {
      closed = true;
      await Promise.all([...queues.values()].map((q) => within(q.close(), 5000)));
      pinger.disconnect();
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
