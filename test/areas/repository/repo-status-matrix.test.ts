import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Every repository row answers 401 without a token, 403 without the right
 * (no known role; another user's entry) and 404 for an entry that does not
 * exist, with the error body, and changes nothing.
 */
let rt: TestRuntime;
const base = '/v1/services/store/repo';
let aliceDoc: string;
let aliceCol: string;

type Row = [method: string, path: (id: string) => string, opts: { json?: unknown; body?: string; headers?: Record<string, string> }];
const ROWS: Row[] = [
  ['GET', (id) => `${base}/${id}`, {}],
  ['PUT', (id) => `${base}/${id}`, { json: { name: 'x', metadata: {} } }],
  ['PATCH', (id) => `${base}/${id}`, { json: { metadata: { x: 1 } } }],
  ['POST', (id) => `${base}/${id}`, { json: { name: 'child', type: 'document' } }],
  ['DELETE', (id) => `${base}/${id}`, {}],
  ['GET', (id) => `${base}/${id}/children`, {}],
  ['GET', (id) => `${base}/${id}/content`, {}],
  ['PUT', (id) => `${base}/${id}/content`, { body: 'bytes', headers: { 'content-type': 'text/plain' } }],
  ['DELETE', (id) => `${base}/${id}/content`, {}],
  ['GET', (id) => `${base}/${id}/preview`, {}],
];

async function snapshot(): Promise<string> {
  const { rows } = await rt.services.db.query('SELECT uuid, name, metadata, sha256, modified FROM entries ORDER BY uuid');
  return JSON.stringify(rows);
}

beforeAll(async () => {
  rt = await startTestRuntime();
  const alice = rt.client.withToken(await rt.token('alice', ['user']));
  aliceCol = (await alice.post(base, { name: 'alice-folder', type: 'collection' })).body.uuid;
  aliceDoc = (await alice.post(`${base}/${aliceCol}`, { name: 'alice.txt', type: 'document' })).body.uuid;
  await alice.request('PUT', `${base}/${aliceDoc}/content`, { body: 'hers', headers: { 'content-type': 'text/plain' } });
});
afterAll(() => rt?.close());

describe('status matrix of the repository rows', () => {
  it('401 without a token', async () => {
    const before = await snapshot();
    for (const [method, path, opts] of ROWS) {
      const res = await rt.client.request(method, path(aliceDoc), { ...opts, token: undefined });
      expect(res.status, `${method} ${path('{uuid}')}`).toBe(401);
    }
    for (const path of [base, `${base}/command/${randomUUID()}`, '/v1/repo/inactives']) {
      expect((await rt.client.request('GET', path, { token: undefined })).status).toBeOneOf([401, 405]);
    }
    expect(await snapshot()).toBe(before);
  });

  it('403 for a token without a known role, on every row', async () => {
    const guest = await rt.token('guest', ['visitor']);
    const before = await snapshot();
    for (const [method, path, opts] of ROWS) {
      const res = await rt.client.request(method, path(aliceDoc), { ...opts, token: guest });
      expect(res.status, `${method} ${path('{uuid}')}`).toBe(403);
    }
    expect((await rt.client.get(base, { token: guest })).status).toBe(403);
    expect((await rt.client.post(base, { name: 'g', type: 'document' }, { token: guest })).status).toBe(403);
    expect((await rt.client.post(`${base}/command`, { command: 'delete', parameters: { source: aliceDoc } }, { token: guest })).status).toBe(403);
    expect((await rt.client.post('/v1/repo/inactives', [aliceDoc], { token: guest })).status).toBe(403);
    expect(await snapshot()).toBe(before);
  });

  it("403 on another user's entry, on every row", async () => {
    const bob = await rt.token('bob', ['user']);
    const before = await snapshot();
    for (const [method, path, opts] of ROWS) {
      const id = path('x').endsWith('/children') ? aliceCol : aliceDoc;
      const res = await rt.client.request(method, path(id), { ...opts, token: bob });
      expect(res.status, `${method} ${path('{uuid}')}`).toBe(403);
      expect(res.body.code).toBe('NOT_OWNER');
    }
    expect(await snapshot()).toBe(before);
  });

  it('404 for an entry that does not exist, on every row', async () => {
    const admin = await rt.token('root', ['admin']);
    const before = await snapshot();
    for (const [method, path, opts] of ROWS) {
      const res = await rt.client.request(method, path(randomUUID()), { ...opts, token: admin });
      expect(res.status, `${method} ${path('{uuid}')}`).toBe(404);
      expect(res.body.code).toBe('ENTRY_NOT_FOUND');
    }
    expect(await snapshot()).toBe(before);
  });
});
