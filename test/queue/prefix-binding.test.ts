import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createJobQueue, PrefixTakenError, startWorkers } from '../../src/queue/job-queue.js';
import { deploymentKey } from '../../src/queue/prefix-binding.js';
import { createLogger } from '../../src/logging/logger.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { freePort } from '../helpers/process.js';
import { dropQueues } from '../helpers/runtime.js';
import { startRedisServer, type RedisServer } from '../outbox/redis-server.js';

/**
 * A Redis prefix belongs to one deployment (issue 24, item 2): the first
 * queue writes its deployment's id under the prefix; a queue of another
 * deployment is refused and touches no job, also when Redis was down at its
 * start and comes up later.
 */
const log = createLogger('silent');
const CID = '6f1c0f7e-8a55-4c5e-9d1e-2b8f0a3c4d5e';
const prefixes: string[] = [];
let late: RedisServer | undefined;
afterAll(async () => {
  for (const p of prefixes) await dropQueues(p);
  await late?.stop();
});

describe('prefix binding', () => {
  it('the second deployment on a prefix is refused: bound() and every operation reject, its workers never start', async () => {
    const prefix = uniqueName('pb');
    prefixes.push(prefix);
    const a = createJobQueue({ url: TEST_REDIS_URL, prefix, log, deployment: 'deployment-a' });
    // each queue binds as soon as it is created: b and the second a are
    // created once a holds the prefix, or b could win the SET NX
    await a.bound();
    const b = createJobQueue({ url: TEST_REDIS_URL, prefix, log, deployment: 'deployment-b' });
    const again = createJobQueue({ url: TEST_REDIS_URL, prefix, log, deployment: 'deployment-a' });
    try {
      await a.enqueue('command.run', { cid: CID, sid: 'store' });
      const refused = await b.bound().then(() => undefined, (err: unknown) => err);
      expect(refused).toBeInstanceOf(PrefixTakenError);
      expect((refused as Error).message).toMatch(/^redis\.prefix "pb_[^"]+" on redis:\/\/127\.0\.0\.1:6379\/? holds the queues of another deployment/);
      expect((refused as Error).message).toContain('deployment-a');
      await expect(b.enqueue('command.run', { cid: CID, sid: 'other' })).rejects.toBeInstanceOf(PrefixTakenError);
      await expect(b.depths()).rejects.toBeInstanceOf(PrefixTakenError);
      // a worker of b would take a's job at once; it is never created
      let taken = 0;
      const pool = startWorkers({ 'command.run': async () => void taken++ }, { url: TEST_REDIS_URL, prefix, log, concurrency: 1, ready: b.bound() });
      await new Promise((r) => setTimeout(r, 1500));
      expect(taken).toBe(0);
      expect((await a.depths()).commands.waiting).toBe(1);
      await pool.close();
      // the same deployment starting again is welcome
      await again.bound();
      expect((await again.depths()).commands.waiting).toBe(1);
      const redis = new Redis(TEST_REDIS_URL);
      expect(await redis.get(deploymentKey(prefix))).toBe('deployment-a');
      redis.disconnect();
    } finally {
      await Promise.all([a.close(), b.close(), again.close()]);
    }
  });

  it('Redis down at start: both queues hold their jobs back; when it comes up one deployment binds and the other never writes', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const prefix = uniqueName('pbl');
    const a = createJobQueue({ url, prefix, log, deployment: 'deployment-a' });
    const b = createJobQueue({ url, prefix, log, deployment: 'deployment-b' });
    try {
      const outcome = (p: Promise<unknown>) => p.then(() => 'added', (err: unknown) => (err instanceof PrefixTakenError ? 'refused' : String(err)));
      const added = [outcome(a.enqueue('command.run', { cid: CID, sid: 'a' })), outcome(b.enqueue('command.run', { cid: CID, sid: 'b' }))];
      await new Promise((r) => setTimeout(r, 500));
      late = await startRedisServer(port);
      const results = await Promise.all(added);
      expect([...results].sort()).toEqual(['added', 'refused']);
      const winner = results[0] === 'added' ? a : b;
      const redis = new Redis(url);
      expect(await redis.get(deploymentKey(prefix))).toBe(results[0] === 'added' ? 'deployment-a' : 'deployment-b');
      const job = JSON.parse((await redis.hget(`${prefix}:commands:command.${CID}.run`, 'data'))!) as { sid: string };
      expect(job.sid).toBe(results[0] === 'added' ? 'a' : 'b');
      redis.disconnect();
      expect((await winner.depths()).commands.waiting).toBe(1);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  }, 60_000);
});
