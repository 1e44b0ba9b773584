import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

let rt: TestRuntime;
beforeAll(async () => {
  rt = await startTestRuntime();
});
afterAll(() => rt?.close());

describe('services', () => {
  it('lists the configured services with their capabilities', async () => {
    const api = rt.client.withToken(await rt.token('u', ['user']));
    const res = await api.get('/v1/services');
    expect(res.status).toBe(200);
    // the demo configuration's services (config/default.yaml), then the test runtime's
    expect(res.body.map((s: { sid: string }) => s.sid)).toEqual(['store', 'files', 'demo', 'print', 'hotfolder', 'imports', 'nocmd', 'mock']);
    const bySid = (sid: string) => res.body.find((s: { sid: string }) => s.sid === sid);
    const store = bySid('store');
    expect(store).toMatchObject({ sid: 'store', type: 'store', capabilities: { repository: true, commands: ['copy', 'move', 'delete', 'import', 'preview'] } });
    expect(store.links.repo.href).toBe('/v1/services/store/repo');
    expect(bySid('nocmd').capabilities.commands).toEqual([]);
    expect(bySid('mock').capabilities.repository).toBe(false);
    expect(bySid('demo').capabilities).toMatchObject({ repository: false, tasks: { actions: ['start', 'pause', 'resume', 'abort'] } });
    expect(bySid('print')).toMatchObject({ type: 'print', capabilities: { repository: false, tasks: { actions: ['start', 'pause', 'resume', 'abort'] } } });
    expect(bySid('hotfolder')).toMatchObject({ type: 'hotfolder', capabilities: { repository: false, tasks: null, intake: true } });
    expect(bySid('imports')).toMatchObject({ type: 'csv', capabilities: { repository: false, tasks: null, intake: true } });
  });

  it('one service; 404 for an unknown one', async () => {
    const api = rt.client.withToken(await rt.token('u', ['user']));
    expect((await api.get('/v1/services/files')).body.type).toBe('filesystem');
    const res = await api.get('/v1/services/unknown');
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('SERVICE_NOT_FOUND');
  });
});

describe('health, readiness, metrics, docs', () => {
  it('/healthz and /readyz (database and Redis)', async () => {
    const health = await fetch(`${rt.url}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${rt.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok' } });
  });

  it('/metrics: request durations by route template, queue depths, job outcomes', async () => {
    const api = rt.client.withToken(await rt.token('u', ['admin']));
    await api.get('/v1/services/store');
    // a previewable type: its preview is a job (a type no renderer takes gets no job)
    const doc = await api.post('/v1/services/store/repo', { name: 'm.png', type: 'document' });
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#ffffff' } }).png().toBuffer();
    await api.request('PUT', `/v1/services/store/repo/${doc.body.uuid}/content`, { body: png, headers: { 'content-type': 'image/png' } });
    const text = await eventually(async () => {
      const t = await (await fetch(`${rt.url}/metrics`)).text();
      return /queue_job_outcomes_total\{queue="previews",name="preview.render",outcome="completed"\}/.test(t) ? t : undefined;
    });
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/v1\/services\/:sid",status="200"\} \d+/);
    expect(text).toMatch(/queue_jobs\{queue="commands",state="waiting"\} \d+/);
    expect(text).toMatch(/queue_job_outcomes_total\{queue="previews",name="preview.render",outcome="completed"\} \d+/);
    expect(text).toMatch(/process_resident_memory_bytes/);
  });

  it('serves the OpenAPI document and a docs page', async () => {
    const doc = await (await fetch(`${rt.url}/openapi/workflow-api.json`)).json() as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toBe('3.1.0');
    expect(Object.keys(doc.paths)).toContain('/services/{sid}/repo/{uuid}/content');
    for (const p of ['/ui', '/ui/{pid}', '/panels', '/panels/{pid}', '/config', '/sessions']) expect(Object.keys(doc.paths)).toContain(p);
    const page = await fetch(`${rt.url}/docs`);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('swagger-ui-bundle.js');
    const bundle = await fetch(`${rt.url}/docs/assets/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect((await bundle.text()).length).toBeGreaterThan(100_000);
    const escape = await fetch(`${rt.url}/docs/assets/..%2Fpackage.json`);
    expect(escape.status).toBe(404);
    await escape.arrayBuffer();
  });
});
