import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { LongLivedResponses } from '../../src/api/long-lived.js';
import type { Area } from '../../src/areas/area.js';
import { AREAS } from '../../src/areas/index.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The /v1 and /v3 parent routers authenticate once for every area route below
 * them: an area that adds a route without a single auth line still gets 401
 * without a token.
 */
const careless: Area = {
  name: 'careless',
  v1: () => new Router().get('/careless', (ctx) => { ctx.body = { open: true }; }),
  v3: () => new Router().get('/careless', (ctx) => { ctx.body = { open: true }; }),
};

let rt: TestRuntime;
let server: http.Server;
let base: string;
beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false } });
  server = http.createServer(createApp(rt.services, { shuttingDown: false, longLived: new LongLivedResponses() }, [...AREAS, careless]).callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rt.close();
});

describe('parent routers', () => {
  it('a route added under /v1 or /v3 without any auth line answers 401 without a token, 200 with one', async () => {
    const token = await rt.token('alice', ['user']);
    for (const prefix of ['/v1', '/v3']) {
      const anon = await fetch(`${base}${prefix}/careless`);
      expect(anon.status).toBe(401);
      expect(anon.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await anon.json()).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      const bad = await fetch(`${base}${prefix}/careless`, { headers: { authorization: 'Bearer x.y.z' } });
      expect(bad.status).toBe(401);
      const ok = await fetch(`${base}${prefix}/careless`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      expect(await ok.json()).toEqual({ open: true });
    }
  });

  it('unknown paths under the parent routers are 404 without a token (no route matched, nothing to protect)', async () => {
    const res = await fetch(`${base}/v1/no-such-area`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});
