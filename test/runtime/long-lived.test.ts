import http from 'node:http';
import { PassThrough } from 'node:stream';
import Router from '@koa/router';
import { afterAll, describe, expect, it } from 'vitest';
import { AREAS } from '../../src/areas/index.js';
import type { Area } from '../../src/areas/area.js';
import { keepOpen } from '../../src/api/context.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Shutdown ends long-lived responses (event streams) at once instead of
 * waiting the grace period for them, while a request in flight that did not
 * register still finishes. A test-only area on a real server.
 */
const streamArea: Area = {
  name: 'test-stream',
  v1: () => {
    const router = new Router();
    router.get('/test/stream', (ctx) => {
      const body = new PassThrough();
      ctx.type = 'text/event-stream';
      ctx.body = body;
      body.write('data: hello\n\n');
      keepOpen(ctx, () => body.end('event: bye\ndata: shutting down\n\n'));
    });
    router.get('/test/slow', async (ctx) => {
      await new Promise((r) => setTimeout(r, 1500));
      ctx.body = { done: true };
    });
    return router;
  },
};

let rt: TestRuntime | undefined;
afterAll(async () => {
  await rt?.close();
});

/** GET with a token; resolves with the status once headers arrive, and with the whole body and how it ended. */
function open(url: string, token: string) {
  let onHeaders: (s: number) => void;
  const headers = new Promise<number>((r) => (onHeaders = r));
  const done = new Promise<{ body: string; ended: 'end' | 'error' }>((resolve) => {
    const req = http.get(url, { headers: { authorization: `Bearer ${token}` } }, (res) => {
      onHeaders(res.statusCode!);
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ body, ended: 'end' }));
      res.on('error', () => resolve({ body, ended: 'error' }));
    });
    req.on('error', () => resolve({ body: '', ended: 'error' }));
  });
  return { headers, done };
}

describe('long-lived responses at shutdown', () => {
  it('streams are ended at once with a last event; a request in flight still completes; stop does not wait the grace period', async () => {
    // a grace period far longer than the test may take
    rt = await startTestRuntime({ parts: { api: true, workers: false, areas: [...AREAS, streamArea] }, overrides: { server: { port: 0, host: '127.0.0.1', shutdownTimeoutMs: 120_000 } } });
    const token = await rt.token('alice');
    const streams = [open(`${rt.url}/v1/test/stream`, token), open(`${rt.url}/v1/test/stream`, token)];
    for (const s of streams) expect(await s.headers).toBe(200);
    const slow = open(`${rt.url}/v1/test/slow`, token);
    await new Promise((r) => setTimeout(r, 200)); // the slow request is in flight

    const t0 = Date.now();
    await rt.stop();
    const took = Date.now() - t0; // afterAll's close() reuses this stop and drops the storage
    expect(took).toBeLessThan(20_000);
    for (const s of streams) {
      const { body, ended } = await s.done;
      expect(ended).toBe('end');
      expect(body).toBe('data: hello\n\nevent: bye\ndata: shutting down\n\n');
    }
    const slowDone = await slow.done;
    expect(slowDone).toEqual({ body: '{"done":true}', ended: 'end' });
  });
});
