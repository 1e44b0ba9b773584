import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { writePerTurn } from '../../src/queue/redis-connection.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';

const key = uniqueName('wpt');
const redis = new Redis(TEST_REDIS_URL);
afterAll(async () => {
  await redis.del(`${key}:n`, `${key}:l`);
  redis.disconnect();
});

/** Counts the socket's write calls (one write or writev system call each). */
function countWrites(r: Redis): () => number {
  const socket = r.stream as unknown as { _write: (...a: unknown[]) => unknown; _writev: (...a: unknown[]) => unknown };
  let n = 0;
  for (const m of ['_write', '_writev'] as const) {
    const orig = socket[m];
    socket[m] = function (this: unknown, ...a: unknown[]) {
      n++;
      return orig.apply(this, a);
    };
  }
  return () => n;
}

describe('writePerTurn (real Redis)', () => {
  it('sends the commands of one turn in one write, in order, each with its own reply', async () => {
    await redis.ping();
    writePerTurn(redis);
    const writes = countWrites(redis);
    const replies = await Promise.all([
      redis.incr(`${key}:n`), redis.rpush(`${key}:l`, 'a'), redis.incr(`${key}:n`), redis.rpush(`${key}:l`, 'b'), redis.lrange(`${key}:l`, 0, -1),
    ]);
    expect(replies).toEqual([1, 1, 2, 2, ['a', 'b']]);
    expect(writes()).toBe(1);
    // commands sent from the continuations of one turn (a batch of jobs finishing together) share the write too
    await Promise.all([1, 2, 3].map(async () => {
      await Promise.resolve();
      return redis.incr(`${key}:n`);
    }));
    expect(writes()).toBe(2);
    // a later turn writes again
    expect(await redis.get(`${key}:n`)).toBe('5');
    expect(writes()).toBe(3);
  });
});
