import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { expectError, type TestClient } from '../helpers/client.js';

/** Bad input: a clear 4xx error body, and nothing changed. */
let rt: TestRuntime;
let api: TestClient;
const base = '/v1/services/store/repo';

async function snapshot(): Promise<string> {
  const { rows } = await rt.services.db.query('SELECT uuid, name, metadata, modified FROM entries ORDER BY uuid');
  return JSON.stringify(rows);
}

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { server: { jsonLimit: '16kb' } } });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  await api.post(base, { name: 'existing.txt', type: 'document', metadata: { keep: true } });
});
afterAll(() => rt?.close());

/** Every error body here is also free of stack traces. */
const NO_STACK = { noStackTrace: true };

describe('every error has the one body', () => {
  it('unknown routes: 404; known path with another method: 405 with Allow', async () => {
    expectError(await api.get('/v1/nothing-here'), 404, 'NOT_FOUND', NO_STACK);
    expectError(await api.get('/nothing'), 404, 'NOT_FOUND', NO_STACK);
    const res = await api.request('DELETE', '/v1/services');
    expectError(res, 405, 'METHOD_NOT_ALLOWED', NO_STACK);
    expect(res.headers.get('allow')).toMatch(/GET/);
  });

  it('malformed JSON, wrong types, unknown fields, missing body, wrong media type: 4xx, nothing changed', async () => {
    const before = await snapshot();
    const cases: [string, { body?: string; headers?: Record<string, string>; json?: unknown }, number, string][] = [
      ['malformed', { body: '{"name": "a",', headers: { 'content-type': 'application/json' } }, 400, 'INVALID_JSON'],
      ['wrong type', { json: { name: 42, type: 'document' } }, 400, 'VALIDATION_FAILED'],
      ['bad enum', { json: { name: 'a', type: 'folder' } }, 400, 'VALIDATION_FAILED'],
      ['unknown field', { json: { name: 'a', type: 'document', colour: 'red' } }, 400, 'VALIDATION_FAILED'],
      ['metadata not an object', { json: { name: 'a', metadata: [1, 2] } }, 400, 'VALIDATION_FAILED'],
      ['array body', { json: [{ name: 'a' }] }, 400, 'VALIDATION_FAILED'],
      ['empty body', { body: '', headers: { 'content-type': 'application/json' } }, 400, 'BODY_REQUIRED'],
      ['no body', {}, 400, 'BODY_REQUIRED'],
      ['text body', { body: 'name=a', headers: { 'content-type': 'text/plain' } }, 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['bad names', { json: { name: '../escape', type: 'document' } }, 400, 'INVALID_NAME'],
      ['empty name', { json: { name: '', type: 'document' } }, 400, 'VALIDATION_FAILED'],
      ['oversized', { json: { name: 'big', metadata: { blob: 'x'.repeat(20_000) } } }, 413, 'PAYLOAD_TOO_LARGE'],
    ];
    for (const [label, opts, status, code] of cases) {
      const res = await api.request('POST', base, opts);
      expect(res.status, label).toBe(status);
      expectError(res, status, code, NO_STACK);
    }
    expect(await snapshot()).toBe(before);
  });

  it('invalid UUIDs and path tricks in URLs: 400 or 404, nothing changed', async () => {
    const before = await snapshot();
    // (fetch normalizes a bare %2e%2e segment away; raw paths are tried in repo-filesystem.test.ts)
    for (const id of ['not-a-uuid', '..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f', '123', "1'%20OR%20'1'='1"]) {
      expectError(await api.get(`${base}/${id}`), 400, 'INVALID_UUID', NO_STACK);
      expectError(await api.patch(`${base}/${id}`, { metadata: {} }), 400, 'INVALID_UUID', NO_STACK);
      expectError(await api.delete(`${base}/${id}`), 400, 'INVALID_UUID', NO_STACK);
    }
    expectError(await api.get(`${base}/command/not-a-uuid`), 400, 'INVALID_UUID', NO_STACK);
    expect([400, 404]).toContain((await api.get('/v1/services/..%2Fstore/repo')).status);
    expect(await snapshot()).toBe(before);
  });

  it('query parameters: bad values are 400', async () => {
    for (const q of ['limit=1000', 'offset=x', 'sort=-', 'scope=x', 'limit=1&limit=2', 'embed=nope']) {
      const res = await api.get(`${base}?${q}`);
      expect(res.status, q).toBe(400);
    }
  });

  it('a command with bad parameters: 400 naming the parameter; unknown command: 400', async () => {
    const res = await api.post(`${base}/command`, { command: 'copy', parameters: { source: 'x' } });
    expectError(res, 400, 'INVALID_PARAMETERS', NO_STACK);
    expect(JSON.stringify(res.body.details)).toMatch(/parameters.source/);
    expectError(await api.post(`${base}/command`, { command: 'explode', parameters: {} }), 400, 'VALIDATION_FAILED', NO_STACK);
    expectError(await api.post(`${base}/command`, { command: 'import', parameters: { url: 'file:///etc/passwd' } }), 400, 'INVALID_PARAMETERS', NO_STACK);
    const { rows } = await rt.services.db.query('SELECT count(*)::int AS n FROM commands');
    expect(rows[0]).toEqual({ n: 0 });
  });
});
