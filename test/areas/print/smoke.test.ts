import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { makePrinter, pp, submit } from './helpers.js';

/** The print API's main paths on both database drivers (the OData SQL, jsonb paths and dates included). */
describe.each(['postgres', 'pglite'] as const)('print API on %s', (db) => {
  let rt: TestRuntime;
  let api: TestClient;
  beforeAll(async () => {
    rt = await startTestRuntime({ db, parts: { api: true, workers: false } });
    api = rt.client.withToken(await rt.token('alice', ['admin']));
  });
  afterAll(async () => rt?.close());

  it('submits, lists with OData, operates, redirects, counts', async () => {
    expect((await rt.client.get('/')).body.version).toBe('11.2.0');
    await makePrinter(api, 'p 1');
    await makePrinter(api, 'p2');
    const j = await submit(api, 'p 1', '%PDF-1.4', { name: 'Quarterly report' });
    expect(j.status, JSON.stringify(j.body)).toBe(201);
    const q = async (filter: string) => (await api.get(`/v3/jobs/?$filter=${encodeURIComponent(filter)}&$inlinecount=allpages`)).body.totalCount;
    expect(await q("status eq 'waitprocessing' and printer eq 'p 1'")).toBe(1);
    expect(await q("checkin/type eq 'api' and substringof('report', tolower(name))")).toBe(1);
    expect(await q("created ge datetime'2000-01-01T00:00:00Z' and not (copies gt 1)")).toBe(1);
    expect(await q("startswith(name, 'x'' or 1=1 --')")).toBe(0);
    expect((await api.put(`/v3/jobs/${j.body.id}/pause`)).body.status).toBe('paused');
    expect((await api.put(`/v3/jobs/${j.body.id}/pause`)).status).toBe(412);
    expect((await api.put(`/v3/jobs/${j.body.id}/resume`)).body.status).toBe('waitprocessing');
    expect((await api.put(`${pp('p 1')}/redirect`, { target: 'p2' })).body.runtime.redirect).toBe('p2');
    expect((await api.get(`/v3/jobs/${j.body.id}`)).body).toMatchObject({ printer: 'p2', redirectedFrom: 'p 1' });
    expect((await api.put(`${pp('p2')}/redirect`, { target: 'p 1' })).status).toBe(412);
    expect((await api.get('/v3/statistics/job-count')).body.total).toBe(1);
    expect((await api.get('/v3/statistics/job-series?interval=day')).body.series.length).toBeGreaterThanOrEqual(30);
    expect((await api.get(`/v3/jobs/${j.body.id}/logs`)).body.length).toBeGreaterThanOrEqual(4);
  });
});
