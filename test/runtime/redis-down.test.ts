import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * /metrics and /readyz never wait on Redis. "Redis" here is a port that
 * accepts connections and never answers (the worst case: nothing fails, every
 * command just waits), so any request that waited on it would hang.
 */
let silent: net.Server;
const sockets = new Set<net.Socket>();
let rt: TestRuntime;

beforeAll(async () => {
  silent = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const { port } = silent.address() as net.AddressInfo;
  rt = await startTestRuntime({ parts: { api: true, workers: false }, overrides: { redis: { url: `redis://127.0.0.1:${port}` } } });
});
afterAll(async () => {
  await rt?.close(); // bounded even with Redis silent (queue.close is)
  for (const s of sockets) s.destroy();
  silent?.close();
});

/**
 * A request that waited on the silent Redis would not answer within the
 * 15 s abort; "at once" is judged well below that, with room for a loaded
 * machine (the suite runs files in parallel).
 */
const AT_ONCE_MS = 5000;

const timed = async (path: string) => {
  const t0 = Date.now();
  const res = await fetch(`${rt.url}${path}`, { signal: AbortSignal.timeout(15_000) });
  const text = await res.text();
  return { status: res.status, text, ms: Date.now() - t0 };
};

describe('Redis that does not answer', () => {
  it('/readyz answers at once: ready (requests need only the database), saying Redis is not connected', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await timed('/readyz');
      expect(r.status).toBe(200);
      expect(JSON.parse(r.text).checks).toMatchObject({ database: 'ok', redis: 'not connected' });
      expect(r.ms).toBeLessThan(AT_ONCE_MS);
    }
  });

  it('/metrics answers at once, without queue depths it never got', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await timed('/metrics');
      expect(r.status).toBe(200);
      expect(r.text).toMatch(/http_request_duration_seconds/);
      expect(r.text).not.toMatch(/queue_jobs\{/);
      expect(r.ms).toBeLessThan(AT_ONCE_MS);
    }
  });
});
