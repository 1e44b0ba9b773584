import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { expectError, type TestClient } from '../../helpers/client.js';
import { makePrinter, submit } from './helpers.js';

/** Root routes, user roles, configuration keys, flows and statistics on real PostgreSQL and Redis. */
let rt: TestRuntime;
let admin: TestClient;
let operator: TestClient;
let user: TestClient;

beforeAll(async () => {
  rt = await startTestRuntime({ parts: { api: true, workers: false } });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
  user = rt.client.withToken(await rt.token('ute', ['user']));
});
afterAll(async () => rt?.close());

describe('root and user roles', () => {
  it('/ and /v3/ say what the service is, without a token', async () => {
    const root = await rt.client.get('/');
    expect(root.body).toMatchObject({ api: 'Print Job Management API', version: '11.2.0', links: { v3: '/v3/' } });
    const v3 = await rt.client.get('/v3/');
    expect(v3.body.links).toMatchObject({ jobs: '/v3/jobs/', printers: '/v3/printers/', flows: '/v3/flows/', configs: '/v3/configs/', userroles: '/v3/auth/userroles' });
    expectError(await rt.client.request('POST', '/v3/', { body: '' }), 405, 'METHOD_NOT_ALLOWED');
    const spec = await rt.client.get('/openapi/print-api.json');
    expect(spec.body.info.version).toBe('11.2.0');
    expect(spec.body.paths['/v3/jobs/'].post['x-extension']).toBe(true);
  });

  it('userroles reports roles and rights per print area', async () => {
    expectError(await rt.client.get('/v3/auth/userroles'), 401, 'UNAUTHORIZED');
    const u = await user.get('/v3/auth/userroles');
    expect(u.body).toMatchObject({ user: 'ute', roles: ['user'], permissions: { jobs: { scope: 'own', actions: ['read', 'write', 'delete', 'act'] }, printers: { scope: 'all', actions: ['read'] } } });
    expect(u.body.permissions.configuration).toBeUndefined();
    const o = await operator.get('/v3/auth/userroles');
    expect(o.body.permissions).toMatchObject({ jobs: { scope: 'all' }, printers: { actions: ['read', 'act'] }, configuration: { actions: ['read'] } });
  });
});

describe('configs', () => {
  it('GET, PUT merges, DELETE ?key= removes', async () => {
    expect((await admin.get('/v3/configs/')).body).toEqual({});
    expect((await admin.put('/v3/configs/', { 'ui.theme': 'dark', limits: { a: 1 } })).body).toEqual({ 'ui.theme': 'dark', limits: { a: 1 } });
    expect((await admin.put('/v3/configs/', { limits: [1, 2], 'Grüße 🖨️': null })).body).toEqual({ 'ui.theme': 'dark', limits: [1, 2], 'Grüße 🖨️': null });
    expect((await operator.get('/v3/configs/')).body['ui.theme']).toBe('dark');
    expect((await admin.delete(`/v3/configs/?key=limits&key=${encodeURIComponent('Grüße 🖨️')}&key=unknown`)).body).toEqual({ 'ui.theme': 'dark' });
  });

  it('refuses bad input and missing rights, changing nothing', async () => {
    await admin.put('/v3/configs/', { keep: 1 });
    const before = (await admin.get('/v3/configs/')).body;
    expectError(await admin.put('/v3/configs/', [1, 2]), 400, 'VALIDATION_FAILED');
    expectError(await admin.put('/v3/configs/', 'text'), 400, 'VALIDATION_FAILED');
    expectError(await admin.put('/v3/configs/', { 'a\u0001': 1 }), 400, 'VALIDATION_FAILED');
    expectError(await admin.put('/v3/configs/', { ['k'.repeat(201)]: 1 }), 400, 'VALIDATION_FAILED');
    expectError(await admin.put('/v3/configs/', { big: 'x'.repeat(2_000_000) }), 413, 'PAYLOAD_TOO_LARGE');
    expectError(await admin.put('/v3/configs/', { nul: 'a\u0000b' }), 400, 'INVALID_CHARACTER');
    expectError(await admin.put('/v3/configs/'), 400, 'BODY_REQUIRED');
    expectError(await admin.delete('/v3/configs/'), 400, 'INVALID_QUERY');
    expectError(await admin.delete('/v3/configs/?name=keep'), 400, 'INVALID_QUERY');
    expectError(await operator.put('/v3/configs/', { x: 1 }), 403, 'FORBIDDEN');
    expectError(await operator.delete('/v3/configs/?key=keep'), 403, 'FORBIDDEN');
    expectError(await user.get('/v3/configs/'), 403, 'FORBIDDEN');
    expect((await admin.get('/v3/configs/')).body).toEqual(before);
  });
});

describe('flows', () => {
  const good = { name: 'letterhead', description: 'stamp and rotate', steps: [{ use: 'rotate', with: { degrees: 90 } }, { use: 'stampText', with: { text: 'COPY' } }] };

  it('create, list, get, delete', async () => {
    const res = await admin.post('/v3/flows/', good);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ name: 'letterhead', type: 'custom', steps: [{ use: 'rotate' }, { use: 'stampText' }] });
    expect((await operator.get('/v3/flows/')).body.map((f: { name: string }) => f.name)).toEqual(['letterhead']);
    expect((await operator.get('/v3/flows/letterhead')).body.description).toBe('stamp and rotate');
    expectError(await admin.post('/v3/flows/', good), 409, 'FLOW_EXISTS');
    expectError(await operator.post('/v3/flows/', { ...good, name: 'x' }), 403, 'FORBIDDEN');
    expectError(await user.get('/v3/flows/'), 403, 'FORBIDDEN');
    expectError(await admin.get('/v3/flows/nope'), 404, 'FLOW_NOT_FOUND');
    expectError(await admin.delete('/v3/flows/nope'), 404, 'FLOW_NOT_FOUND');
    expect((await admin.delete('/v3/flows/letterhead')).body.name).toBe('letterhead');
    expectError(await admin.get('/v3/flows/letterhead'), 404, 'FLOW_NOT_FOUND');
  });

  it('malformed flows: 400 naming the step and the problem, nothing stored', async () => {
    const bad: [unknown, Record<string, unknown>][] = [
      [{ ...good, steps: [{ use: 'rotate', with: { degrees: 90 } }, { use: 'runScript', with: { code: 'process.exit()' } }] }, { step: 1, use: 'runScript' }],
      [{ ...good, steps: [{ use: 'rotate', with: { degrees: 45 } }] }, { step: 0, use: 'rotate' }],
      [{ ...good, steps: [{ use: 'rotate', with: { degrees: 90, extra: 1 } }] }, { step: 0 }],
      [{ ...good, steps: ['rotate'] }, { step: 0 }],
      [{ ...good, steps: Array.from({ length: 51 }, () => ({ use: 'rotate', with: { degrees: 90 } })) }, {}],
      [{ ...good, name: '' }, {}],
      [{ ...good, name: 'a/b' }, {}],
      [{ steps: [] }, {}],
      [[good], {}],
    ];
    for (const [body, details] of bad) {
      const res = await admin.post('/v3/flows/', body);
      expectError(res, 400, 'INVALID_FLOW');
      expect(res.body.details).toMatchObject(details);
    }
    expectError(await admin.request('POST', '/v3/flows/', { body: '{"name":', headers: { 'content-type': 'application/json' } }), 400, 'INVALID_JSON');
    expectError(await admin.post('/v3/flows/', { ...good, description: 'x'.repeat(2_000_000) }), 413, 'PAYLOAD_TOO_LARGE');
    expect((await admin.get('/v3/flows/')).body).toEqual([]);
  });

  it('a flow in use is not deleted; printers and jobs pick it up', async () => {
    await admin.post('/v3/flows/', { ...good, name: 'used' });
    await makePrinter(admin, 'fp', { flow: 'used' });
    const job = await submit(admin, 'fp');
    expect(job.body).toMatchObject({ flow: 'used', status: 'waitpreprocessing' });
    expect((await submit(admin, 'fp', 'x', { flow: '' })).body).toMatchObject({ flow: null, status: 'waitprocessing' });
    const res = await admin.delete('/v3/flows/used');
    expectError(res, 409, 'FLOW_IN_USE');
    expect(res.body.details.printers).toEqual(['fp']);
  });
});

describe('statistics', () => {
  it('job-count, job-series by hour and day with defaults, printer-count, metadata', async () => {
    await makePrinter(admin, 's1');
    await makePrinter(admin, 's2');
    for (let i = 0; i < 3; i += 1) await submit(admin, 's1');
    const j = await submit(admin, 's2');
    await admin.put(`/v3/jobs/${j.body.id}/cancel`);
    await operator.put('/v3/printers/s2/pause');
    const count = await operator.get('/v3/statistics/job-count?printer=s1');
    expect(count.body).toMatchObject({ total: 3, byStatus: { waitprocessing: 3 }, printer: 's1' });
    expect(Date.parse(count.body.to) - Date.parse(count.body.from)).toBe(24 * 3600_000);
    const all = await operator.get('/v3/statistics/job-count');
    expect(all.body.byStatus.canceled).toBe(1);
    const hourly = await operator.get('/v3/statistics/job-series');
    expect(hourly.body.interval).toBe('hour');
    expect(hourly.body.series.length).toBeGreaterThanOrEqual(24);
    expect(hourly.body.series.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(all.body.total);
    const daily = await operator.get('/v3/statistics/job-series?interval=day');
    expect(daily.body.series.length).toBeGreaterThanOrEqual(30);
    const span = await operator.get('/v3/statistics/job-series?interval=day&from=2024-01-01&to=2024-01-08');
    expect(span.body.series.map((b: { time: string }) => b.time.slice(0, 10))).toEqual(['2024-01-01', '2024-01-02', '2024-01-03', '2024-01-04', '2024-01-05', '2024-01-06', '2024-01-07']);
    expect(span.body.series.every((b: { count: number }) => b.count === 0)).toBe(true);
    const printers = await operator.get('/v3/statistics/printer-count');
    expect(printers.body.byStatus).toMatchObject({ paused: 1 });
    expect(printers.body.total).toBeGreaterThanOrEqual(2);
    expect((await operator.get('/v3/statistics/metadata')).body.statistics.map((s: { name: string }) => s.name)).toEqual(['job-count', 'job-series', 'printer-count']);
  });

  it('refuses bad parameters and missing rights', async () => {
    expectError(await operator.get('/v3/statistics/job-count?from=yesterday'), 400, 'VALIDATION_FAILED');
    expectError(await operator.get('/v3/statistics/job-count?from=2024-02-30'), 400, 'VALIDATION_FAILED');
    expectError(await operator.get('/v3/statistics/job-count?from=2024-02-02&to=2024-02-01'), 400, 'INVALID_QUERY');
    expectError(await operator.get('/v3/statistics/job-count?interval=day'), 400, 'INVALID_QUERY');
    expectError(await operator.get('/v3/statistics/job-series?interval=week'), 400, 'VALIDATION_FAILED');
    expectError(await operator.get('/v3/statistics/job-series?from=2000-01-01&to=2024-01-01'), 400, 'INVALID_QUERY');
    expectError(await operator.get('/v3/statistics/job-count?colour=red'), 400, 'VALIDATION_FAILED');
    expectError(await operator.get('/v3/statistics/printer-count?x=1'), 400, 'INVALID_QUERY');
    expectError(await user.get('/v3/statistics/job-count'), 403, 'FORBIDDEN');
  });
});
