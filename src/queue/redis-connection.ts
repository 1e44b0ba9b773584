import type { ConnectionOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import type { Logger } from '../logging/logger.js';

/** Where the queues live and how their connections behave (both halves: queue and workers). */
export interface QueueOptions {
  url: string;
  prefix: string;
  log: Logger;
  /** How long a job's lock lives without renewal (BullMQ `lockDuration`); default 30 s. */
  lockDurationMs?: number;
  /**
   * The deployment (its database's id) the prefix belongs to (`prefix-binding.ts`):
   * the queue touches no job before the prefix is found to be this deployment's.
   */
  deployment?: string;
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
export const DEFAULT_LOCK_MS = 30_000;

/** BullMQ connections wait for Redis (offline queue, no retry limit): jobs are never lost to a blip. */
export function connectionOf(url: string): ConnectionOptions {
  return { url, maxRetriesPerRequest: null, enableOfflineQueue: true };
}

/**
 * Has the connection send the commands of one turn of the event loop in one
 * socket write: the first command of a turn corks the socket, and it is
 * uncorked on `process.nextTick`, after the turn's callbacks and promise
 * continuations. When a batch of jobs finishes together (their final reports
 * share one statement), each job's `moveToFinished` would otherwise be a write
 * system call of its own, waking Redis each time. Only the writes are grouped:
 * the commands go in the order they were sent, on the same connection, each
 * with its own reply, so nothing BullMQ relies on changes (unlike ioredis'
 * auto-pipelining, which defers some commands and not others).
 */
export function writePerTurn(redis: Redis): void {
  const send = redis.sendCommand;
  let corked = false;
  redis.sendCommand = function (this: Redis, ...args: Parameters<Redis['sendCommand']>) {
    const socket = this.stream as Redis['stream'] | undefined;
    if (!corked && socket?.writable) {
      corked = true;
      socket.cork();
      process.nextTick(() => {
        corked = false;
        socket.uncork();
      });
    }
    return send.apply(this, args);
  };
}

/** Resolves with the promise, or after `ms` (a close must not hang on a Redis that is gone). */
export const within = (p: Promise<unknown>, ms: number): Promise<unknown> =>
  Promise.race([p.catch(() => undefined), new Promise((resolve) => setTimeout(resolve, ms).unref())]);

/** Resolves once `redis` is connected; rejects after `ms` (it never queues commands). */
export async function connectedWithin(redis: Redis, ms: number): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.off('ready', onReady);
      reject(new Error(`Redis not connected within ${ms} ms`));
    }, ms);
    const onReady = () => {
      clearTimeout(timer);
      resolve();
    };
    redis.once('ready', onReady);
  });
}

/** Logs a connection error once per outage instead of on every retry. */
export function outageLogger(log: Logger, what: Record<string, unknown>) {
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
