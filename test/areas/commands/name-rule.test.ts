import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { rootNames } from '../../helpers/repo.js';

/**
 * One name rule for every way a name enters (names.ts): create, rename by PUT
 * and PATCH, the `name` of copy, move and import, and the name an import takes
 * from its URL. Each bad name is refused with 400 INVALID_NAME at the request
 * (commands: at launch) and nothing changes, in the database or on disk.
 */
let rt: TestRuntime;
let api: TestClient;
const fixtures = new Map<string, { doc: string; folder: string }>();

const BAD = [
  '', '.', '..', '../../escape.txt', 'a/b', '/abs', 'a\\b', '..\\..\\x', 'x'.repeat(256), '🙂'.repeat(256),
  'nul\u0000', 'nl\n', 'tab\t', 'del\u007f', 'c1\u0080', 'c1\u0085', 'c1\u009f', 'lone\ud800', '\udfffback',
];
// names from URLs: the last path segment, percent-decoded
const BAD_SEGMENTS = ['a%2Fb', '..%2F..%2Fescape.txt', 'a%5Cb', '%00', 'x%0Ay', '%7F', '%C2%85', 'x'.repeat(256), '%E0%A4%A', '%ED%A0%80'];

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  for (const sid of ['store', 'files']) {
    const doc = (await api.post(`/v1/services/${sid}/repo`, { name: 'doc.txt', type: 'document' })).body.uuid as string;
    const folder = (await api.post(`/v1/services/${sid}/repo`, { name: 'folder', type: 'collection' })).body.uuid as string;
    fixtures.set(sid, { doc, folder });
  }
});
afterAll(async () => {
  await rt?.close();
});

/** NUL cannot even enter a JSON body (INVALID_CHARACTER, before any name rule); every other bad name is INVALID_NAME. */
const codeFor = (what: string) => (what.includes('\\u0000') ? 'INVALID_CHARACTER' : 'INVALID_NAME');
const expectInvalidName = (res: { status: number; body: { code?: string } }, what: string) => {
  expect(res.status, what).toBe(400);
  expect(res.body.code, what).toBe(codeFor(what));
};

describe.each(['store', 'files'])('the name rule on %s', (sid) => {
  const base = `/v1/services/${sid}/repo`;

  it('create, PUT and PATCH refuse every bad name', async () => {
    const { doc } = fixtures.get(sid)!;
    for (const name of BAD) {
      const label = JSON.stringify(name);
      const created = await api.post(base, { name, type: 'document' });
      expect(created.status, `create ${label}`).toBe(400);
      // the empty name fails the body's shape (VALIDATION_FAILED); every other one the name rule
      if (name !== '') expect(created.body.code, `create ${label}`).toBe(codeFor(label));
      if (name !== '') expectInvalidName(await api.put(`${base}/${doc}`, { name, metadata: {} }), `PUT ${label}`);
      if (name !== '') expectInvalidName(await api.patch(`${base}/${doc}`, { name }), `PATCH ${label}`);
    }
  });

  it('copy, move and import refuse a bad `name` at launch', async () => {
    const { doc, folder } = fixtures.get(sid)!;
    for (const name of BAD.filter(Boolean)) {
      const label = JSON.stringify(name);
      for (const [command, parameters] of [
        ['copy', { source: doc, target: folder, name }],
        ['move', { source: doc, target: folder, name }],
        ['import', { url: 'http://127.0.0.1:9/x.txt', name }],
      ] as const) {
        const res = await api.post(`${base}/command`, { command, parameters });
        expectInvalidName(res, `${command} ${label}`);
      }
    }
  });

  it('import refuses a bad name taken from the URL at launch', async () => {
    for (const segment of BAD_SEGMENTS) {
      const res = await api.post(`${base}/command`, { command: 'import', parameters: { url: `http://127.0.0.1:9/dir/${segment}` } });
      expectInvalidName(res, `import URL …/${segment}`);
    }
  });

  it('nothing was created, renamed or moved', async () => {
    expect(await rootNames(api, sid)).toEqual(['doc.txt', 'folder']);
    const { rows } = await rt.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM commands WHERE sid = $1', [sid]);
    expect(rows[0]!.n).toBe(0);
    if (sid === 'files') expect((await readdir(path.join(rt.dataDir, 'files'))).sort()).toEqual(['doc.txt', 'folder']);
  });
});

describe('limits at the edge', () => {
  it('255 characters are a valid name; the file system also limits the UTF-8 bytes', async () => {
    for (const name of ['x'.repeat(255), '🙂'.repeat(255), 'é'.repeat(127) + 'a', 'with space & ümlaut.pdf', '..a', '.hidden']) {
      const res = await api.post('/v1/services/store/repo', { name, type: 'document' });
      expect(res.status, name).toBe(200);
      expect(res.body.name).toBe(name);
    }
    expect((await api.post('/v1/services/files/repo', { name: 'é'.repeat(127) + 'a', type: 'document' })).status).toBe(200);
    const long = await api.post('/v1/services/files/repo', { name: '🙂'.repeat(64), type: 'document' }); // 256 bytes
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('INVALID_NAME');
    const reserved = await api.post('/v1/services/files/repo', { name: '.wcr-00000000-1-00000000.00000000-0000-4000-8000-000000000000.part', type: 'document' });
    expect(reserved.body.code).toBe('INVALID_NAME');
  });
});
