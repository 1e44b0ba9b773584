import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { makePrinter, pp, submit } from './helpers.js';

let rt: TestRuntime;
let api: TestClient;
beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false } });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(async () => rt?.close());

it('smoke', async () => {
  expect((await rt.client.get('/')).body.version).toBe('11.2.0');
  expect((await rt.client.get('/v3/')).status).toBe(200);
  await makePrinter(api, 'p 1');
  const j = await submit(api, 'p 1');
  expect(j.status, JSON.stringify(j.body)).toBe(201);
  const l = await api.get(`/v3/jobs/?$filter=${encodeURIComponent("status eq 'waitprocessing' and printer eq 'p 1'")}&$inlinecount=allpages`);
  expect(l.status, JSON.stringify(l.body)).toBe(200);
  expect(l.body.totalCount).toBe(1);
  expect((await api.get(pp('p 1'))).body.runtime.queuedJobs).toBe(1);
  expect((await api.put(`/v3/jobs/${j.body.id}/pause`)).body.status).toBe('paused');
  expect((await api.get(`/v3/jobs/${j.body.id}/logs`)).body.length).toBe(2);
  expect((await api.get(`/v3/jobs/${j.body.id}/pageinfo`)).status).toBe(200);
});
