import type { Redis } from 'ioredis';
import { StartError } from '../errors/start-error.js';

/** The Redis prefix holds the queues of another deployment (another database). */
export class PrefixTakenError extends StartError {
  override readonly name = 'PrefixTakenError';
}

/** The key under a prefix that names the deployment (database) whose queues live there. */
export const deploymentKey = (prefix: string) => `${prefix}:deployment`;

/**
 * Binds the prefix to a deployment: the first deployment to use a prefix
 * writes its id under it (`SET NX`); a deployment that finds another id there
 * is refused, so two deployments on one Redis never take each other's jobs.
 * Waits for Redis as long as it takes (a start with Redis down goes on, and
 * the queue holds its work back until this has passed); a connection lost
 * half-way is tried again on the next. Rejects with `PrefixTakenError`, or a
 * plain Error once `closed` says the queue is closing.
 */
export async function bindPrefix(redis: Redis, opts: { url: string; prefix: string; deployment: string; closed: () => boolean }): Promise<void> {
  const key = deploymentKey(opts.prefix);
  for (;;) {
    if (opts.closed()) throw new Error('the queue closed before its Redis prefix was checked');
    if (redis.status !== 'ready') {
      await new Promise<void>((resolve) => {
        const done = () => {
          redis.off('ready', done);
          redis.off('end', done);
          resolve();
        };
        redis.on('ready', done);
        redis.on('end', done);
      });
      continue;
    }
    try {
      await redis.set(key, opts.deployment, 'NX');
      const found = await redis.get(key);
      if (found === opts.deployment) return;
      if (found !== null) {
        throw new PrefixTakenError(`redis.prefix "${opts.prefix}" on ${redactUrl(opts.url)} holds the queues of another deployment `
          + `(its database's deployment id is ${found}; this database's is ${opts.deployment}), whose jobs this one would take: `
          + `give this deployment a redis.prefix of its own (configuration key redis.prefix), or another Redis (REDIS_URL). `
          + `If that deployment is gone for good, delete the key "${key}" from Redis.`);
      }
      // deleted in between (a flush): write it again
    } catch (err) {
      if (err instanceof PrefixTakenError) throw err;
      // the connection dropped during the check: wait for it to come back
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** A Redis URL without its password, for messages. */
function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'Redis';
  }
}
