import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../helpers/env.js';
import { freePort } from '../helpers/process.js';
import { eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Readiness means "this process can serve requests": the database is
 * reachable. Requests never wait on Redis (the outbox), so Redis down keeps
 * the process ready and shows in the details and in /metrics. The body is
 * unauthenticated: a reason in plain words, never the driver's error with
 * the database's address.
 */
const ready = async (rt: TestRuntime) => {
  const res = await fetch(`${rt.url}/readyz`, { signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as { status: string; checks: Record<string, string> } };
};

describe('fault: Redis down', () => {
  let rt: TestRuntime;
  beforeAll(async () => {
    // nothing listens on this port: Redis is down for the whole test
    const port = await freePort();
    rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { redis: { url: `redis://127.0.0.1:${port}` } } });
  });
  afterAll(async () => {
    await rt?.close();
  });

  it('fault: /readyz answers 200 while Redis is down, naming Redis in its checks; /metrics shows it; requests work', async () => {
    const r = await ready(rt);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'not connected' } });
    const metrics = await (await fetch(`${rt.url}/metrics`)).text();
    expect(metrics).toMatch(/^redis_connected 0$/m);
    // a request that asks for background work still answers (its job waits in the outbox)
    const api = rt.client.withToken(await rt.token('u', ['admin']));
    const doc = await api.post('/v1/services/store/repo', { name: 'r.txt', type: 'document' });
    expect(doc.status).toBe(200);
  });
});

describe('fault: database unreachable', () => {
  let rt: TestRuntime;
  let proxy: TcpProxy;
  beforeAll(async () => {
    proxy = await TcpProxy.start(TEST_DATABASE_URL);
    rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { database: { url: proxy.url(TEST_DATABASE_URL) } } });
  });
  afterAll(async () => {
    await proxy?.restore();
    await rt?.close();
    await proxy?.close();
  });

  it('fault: /readyz answers 503 with a plain reason, not the driver error or the database address; ready again once it is back', async () => {
    expect((await ready(rt)).status).toBe(200);
    const metrics = await (await fetch(`${rt.url}/metrics`)).text();
    expect(metrics).toMatch(/^redis_connected 1$/m);
    await proxy.cut();
    const r = await ready(rt);
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ status: 'not ready', checks: { database: 'unreachable', redis: 'ok' } });
    expect(r.text).not.toContain(String(proxy.port));
    expect(r.text).not.toMatch(/127\.0\.0\.1|ECONN|connect/i);
    await proxy.restore();
    await eventually(async () => ((await ready(rt)).status === 200 ? true : undefined), 60_000, 250);
  });
});
