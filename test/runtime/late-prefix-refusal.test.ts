import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { PrefixTakenError } from '../../src/queue/job-queue.js';
import { deploymentKey } from '../../src/queue/prefix-binding.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { startTestRuntime, dropQueues, type TestRuntime } from '../helpers/runtime.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Redis down at start, and when it comes up its prefix holds another
 * deployment's queues: the runtime, which started without Redis, stops on
 * its own (`Runtime.failed`, the entrypoint then exits 1) and never wrote a
 * job under that prefix.
 */
const prefix = uniqueName('late');
let proxy: TcpProxy | undefined;
let rt: TestRuntime | undefined;
afterAll(async () => {
  await rt?.close().catch(() => undefined);
  await proxy?.cut();
  await dropQueues(prefix);
});

describe('a Redis prefix of another deployment found after the start', () => {
  it('stops the runtime; no job of this deployment is written there', async () => {
    proxy = await TcpProxy.start(TEST_REDIS_URL);
    const url = proxy.url(TEST_REDIS_URL);
    await proxy.cut(); // Redis "down" for this runtime
    rt = await startTestRuntime({ overrides: { redis: { url, prefix } } });
    // the start went on without Redis; requests answer and their jobs wait in the outbox
    const res = await rt.client.withToken(await rt.token('alice')).post('/v1/services/store/repo', { name: 'a.txt', type: 'document' });
    expect(res.status).toBe(200);
    // meanwhile another deployment took the prefix
    const redis = new Redis(TEST_REDIS_URL);
    await redis.set(deploymentKey(prefix), 'another-deployment');
    let settled = false;
    const failed = rt.failed.then((err) => {
      settled = true;
      return err;
    });
    await proxy.restore();
    const err = await failed;
    expect(settled).toBe(true);
    expect(err).toBeInstanceOf(PrefixTakenError);
    expect(err.message).toMatch(new RegExp(`^redis\\.prefix "${prefix}" on .* holds the queues of another deployment`));
    // stopped: the API refuses (503 while stopping, or the socket is closed), and nothing was enqueued under the prefix
    const after = await fetch(`${rt.url!}/readyz`).then((r) => r.status, () => 'closed');
    expect(after === 'closed' || after === 503).toBe(true);
    expect((await redis.keys(`${prefix}:*`)).sort()).toEqual([deploymentKey(prefix)]);
    expect(await redis.get(deploymentKey(prefix))).toBe('another-deployment');
    redis.disconnect();
  }, 120_000);
});
