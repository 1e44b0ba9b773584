import { spawn, type ChildProcess } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort, killAll, processEnv, startProcess, waitLog } from '../helpers/process.js';
import { eventually } from '../helpers/runtime.js';

/**
 * After an outage the reconciler does not wait for its next pass (a minute
 * by default): Redis coming back starts a pass at once (issue 20, item 15).
 * A worker process on a Redis of its own, which the test kills and starts
 * again on the same port.
 */
const redises: ChildProcess[] = [];
afterAll(() => {
  killAll();
  for (const r of redises) r.kill('SIGKILL');
});

function startRedis(port: number): ChildProcess {
  const r = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  redises.push(r);
  return r;
}

const redisUp = (port: number) => eventually(async () => {
  const { Redis } = await import('ioredis');
  const c = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on('error', () => {}); // refused while the server starts: the poll tries again
  try {
    await c.connect();
    return (await c.ping()) === 'PONG' ? true : undefined;
  } catch {
    return undefined;
  } finally {
    c.disconnect();
  }
}, 20_000, 100);

describe('reconciler after an outage', () => {
  it('fault: Redis back after an outage starts a reconcile pass at once, not at the next interval', async () => {
    const port = await freePort();
    let redis = startRedis(port);
    await redisUp(port);
    const env = await processEnv({ queues: { reconcileIntervalMs: 600_000 } });
    try {
      const worker = await startProcess('worker', { ...env.env, REDIS_URL: `redis://127.0.0.1:${port}` });
      await waitLog(worker, /workers running/);
      redis.kill('SIGKILL');
      await new Promise((r) => setTimeout(r, 2000));
      redis = startRedis(port);
      await redisUp(port);
      const back = Date.now();
      await waitLog(worker, /Redis is back; reconciling now/, 30_000);
      expect(Date.now() - back).toBeLessThan(30_000);
      // and the pass it started ran without failing
      await new Promise((r) => setTimeout(r, 2000));
      const after = worker.logs.slice(worker.logs.findIndex((l) => /Redis is back/.test(l)));
      expect(after.some((l) => /reconcile failed/.test(l))).toBe(false);
    } finally {
      await env.cleanup();
    }
  }, 180_000);
});
