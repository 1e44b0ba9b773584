import { mkdir, symlink, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { intakeFileStore } from '../../../src/connectors/lifecycle/intake-file-store.js';

/**
 * Every row and status of the spec's Functions table over HTTP (real
 * PostgreSQL, Redis and files): the declared list, calls with the spec's
 * `key::value;key::value` query string, a `text/plain` body of pairs or a
 * JSON body, 404 for a missing service or function, 400 for every kind of
 * bad parameter, and the connectors' functions (mock echo and add,
 * filesystem freeSpace and list confined to the root, hot folder pending).
 */

let rt: TestRuntime;
let alice: TestClient;
let reader: TestClient;
let auditor: TestClient;
let files: string;
let drop: string;

const call = (c: TestClient, sid: string, fid: string, pairs = '', opts: { body?: string; type?: string } = {}) =>
  c.request('POST', `/v1/services/${sid}/function/${fid}${pairs === '' ? '' : `?${pairs}`}`,
    opts.body === undefined ? {} : { body: opts.body, headers: { 'content-type': opts.type ?? 'text/plain' } });

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      auth: { roles: { auditor: { description: 'messages only', areas: { messages: { scope: 'own', actions: ['read'] } } } } },
      services: {
        ...TEST_SERVICES,
        fn: { type: 'mock', options: { functions: true } },
        drop: { type: 'hotfolder', options: { stableMs: 60_000, rescanMs: 600_000, folders: [{ path: 'drop', store: { service: 'store' } }, { path: 'drop2', store: { service: 'store' } }] } },
      },
    },
  });
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  reader = rt.client.withToken(await rt.token('rita', ['readonly']));
  auditor = rt.client.withToken(await rt.token('audrey', ['auditor']));
  files = path.join(rt.dataDir, 'files');
  drop = path.join(rt.dataDir, 'drop');
  await mkdir(path.join(files, 'sub'), { recursive: true });
  await writeFile(path.join(files, 'a.txt'), 'hello');
  await writeFile(path.join(files, 'sub', 'b.txt'), 'b');
  await writeFile(path.join(files, 'sub', 'c.txt'), 'cc');
  await writeFile(path.join(files, 'sub', 'd.txt'), 'ddd');
  await symlink(rt.dataDir, path.join(files, 'escape'));
});
afterAll(async () => {
  await rt.close();
});

describe('GET /services/{sid}/function', () => {
  it('lists the declared functions with their parameters and links', async () => {
    const res = await alice.get('/v1/services/fn/function');
    expect(res.status).toBe(200);
    expect(res.body.map((f: { fid: string }) => f.fid)).toEqual(['echo', 'add']);
    expect(res.body[1]).toMatchObject({
      fid: 'add',
      parameters: [{ name: 'a', type: 'number', required: true }, { name: 'b', type: 'number', required: false }],
      links: { self: { href: '/v1/services/fn/function/add' } },
    });
    const fs = await alice.get('/v1/services/files/function');
    expect(fs.body.map((f: { fid: string }) => f.fid)).toEqual(['freeSpace', 'list']);
    expect(fs.body[1].requires).toEqual({ area: 'documents', action: 'read' });
  });

  it('404 for a missing service or one without functions; 401 without a token; 403 without a known role', async () => {
    for (const [sid, code] of [['nope', 'SERVICE_NOT_FOUND'], ['__proto__', 'SERVICE_NOT_FOUND'], ['constructor', 'SERVICE_NOT_FOUND'], ['store', 'NO_FUNCTIONS'], ['mock', 'NO_FUNCTIONS']] as const) {
      const res = await alice.get(`/v1/services/${sid}/function`);
      expect([sid, res.status, res.body.code]).toEqual([sid, 404, code]);
    }
    expect((await rt.client.get('/v1/services/fn/function')).status).toBe(401);
    const stranger = rt.client.withToken(await rt.token('eve', ['no-such-role']));
    const res = await stranger.get('/v1/services/fn/function');
    expect([res.status, res.body.code]).toEqual([403, 'NO_ROLE']);
  });
});

describe('POST /services/{sid}/function/{fid}', () => {
  it('takes key::value pairs in the query string (percent-decoded), a text/plain body of pairs, or a JSON body', async () => {
    const echo = await call(alice, 'fn', 'echo', 'text::hello%20world%3B%20and%20more');
    expect([echo.status, echo.body]).toEqual([200, { text: 'hello world; and more', user: 'alice' }]);
    const add = await call(alice, 'fn', 'add', 'a::1.5;b::2');
    expect(add.body).toEqual({ sum: 3.5 });
    expect((await call(alice, 'fn', 'add', 'a::1.5;b::2;')).body).toEqual({ sum: 3.5 });
    const text = await call(alice, 'fn', 'add', '', { body: 'a::1.5;b::2\n' });
    expect(text.body).toEqual({ sum: 3.5 });
    const json = await alice.post('/v1/services/fn/function/add', { a: 1.5, b: 2 });
    expect([json.status, json.body]).toEqual([200, { sum: 3.5 }]);
    const optional = await call(alice, 'fn', 'add', 'a::4');
    expect(optional.body).toEqual({ sum: 4 });
  });

  it('404 for a missing service, a service without functions, or a missing function (prototype names too)', async () => {
    for (const [sid, fid, code] of [['nope', 'echo', 'SERVICE_NOT_FOUND'], ['__proto__', 'echo', 'SERVICE_NOT_FOUND'], ['toString', 'echo', 'SERVICE_NOT_FOUND'], ['store', 'echo', 'NO_FUNCTIONS'], ['fn', 'nope', 'FUNCTION_NOT_FOUND'],
      ['fn', '__proto__', 'FUNCTION_NOT_FOUND'], ['fn', 'constructor', 'FUNCTION_NOT_FOUND'], ['fn', 'echo.v2', 'FUNCTION_NOT_FOUND'], ['fn', 'ECHO', 'FUNCTION_NOT_FOUND'], ['fn', 'x'.repeat(300), 'FUNCTION_NOT_FOUND']] as const) {
      const res = await call(alice, sid, fid, 'text::x');
      expect([sid, fid.slice(0, 20), res.status, res.body.code]).toEqual([sid, fid.slice(0, 20), 404, code]);
    }
  });

  it('400 INVALID_PARAMETERS for unknown, missing, mistyped or malformed parameters, and nothing is called', async () => {
    const cases: [string, string, RegExp][] = [
      ['add', 'a::x', /a: expected number/],
      ['add', 'b::1', /a: required/],
      ['add', 'a::1;c::2', /c: unknown parameter/],
      ['add', 'a::1;__proto__::2', /__proto__: unknown parameter/],
      ['add', 'a::1;constructor::2', /constructor: unknown parameter/],
      ['add', 'a=1', /not a key::value pair/],
      ['add', 'a::1;;b::2', /not a key::value pair/],
      ['add', '::1', /empty key/],
      ['add', 'a::1;a::2', /more than once/],
      ['add', 'a::%E0%A4%A', /percent-encoding/],
      ['add', 'a::Infinity', /a: expected number/],
      ['add', 'a::', /a: expected number/],
      ['echo', Array.from({ length: 65 }, (_, i) => `k${i}::v`).join(';'), /at most 64/],
      ['echo', `text::${'x'.repeat(9000)}`, /longer than 8192/],
    ];
    for (const [fid, pairs, message] of cases) {
      const res = await call(alice, 'fn', fid, pairs);
      expect([pairs.slice(0, 30), res.status, res.body.code]).toEqual([pairs.slice(0, 30), 400, 'INVALID_PARAMETERS']);
      expect(res.body.message).toMatch(message);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const issues = await call(alice, 'fn', 'add', 'b::x;z::1');
    expect(issues.body.details.issues).toEqual(['z: unknown parameter', 'a: required', 'b: expected number']);
  });

  it('bad bodies: JSON not an object, prototype keys, nested values, both query and body, oversized', async () => {
    const jsonCases: [string, number, string][] = [
      ['[1,2]', 400, 'INVALID_PARAMETERS'],
      ['"a::1"', 400, 'INVALID_PARAMETERS'],
      ['{"a":{"x":1}}', 400, 'INVALID_PARAMETERS'],
      ['{"a":[1]}', 400, 'INVALID_PARAMETERS'],
      ['{"a":1,"__proto__":{"polluted":true}}', 400, 'INVALID_KEY'],
      ['{"a":1,"constructor":{"prototype":{"polluted":true}}}', 400, 'INVALID_PARAMETERS'],
      ['{"a":', 400, 'INVALID_JSON'],
    ];
    for (const [body, status, code] of jsonCases) {
      const res = await call(alice, 'fn', 'add', '', { body, type: 'application/json' });
      expect([body, res.status, res.body.code]).toEqual([body, status, code]);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const both = await call(alice, 'fn', 'add', 'a::1', { body: '{"a":1}', type: 'application/json' });
    expect([both.status, both.body.code]).toEqual([400, 'INVALID_PARAMETERS']);
    const bigText = await call(alice, 'fn', 'echo', '', { body: `text::${'x'.repeat(10_000)}` });
    expect([bigText.status, bigText.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const bigJson = await call(alice, 'fn', 'echo', '', { body: JSON.stringify({ text: 'x'.repeat(2 * 1024 * 1024) }), type: 'application/json' });
    expect([bigJson.status, bigJson.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const xml = await call(alice, 'fn', 'echo', '', { body: '<text/>', type: 'application/xml' });
    expect(xml.status).toBe(415);
  });

  it('a function that needs a right: 403 without it', async () => {
    const res = await call(auditor, 'files', 'freeSpace');
    expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    expect((await call(auditor, 'fn', 'echo', 'text::hi')).status).toBe(200);
  });
});

describe('the filesystem connector\'s functions', () => {
  it('freeSpace: the file system\'s room', async () => {
    const res = await call(reader, 'files', 'freeSpace');
    expect(res.status).toBe(200);
    expect(res.body.total).toBeGreaterThan(0);
    expect(res.body.available).toBeGreaterThan(0);
    expect(res.body.free).toBeGreaterThanOrEqual(res.body.available);
    expect(res.body.total).toBeGreaterThanOrEqual(res.body.free);
    const extra = await call(reader, 'files', 'freeSpace', 'path::x');
    expect([extra.status, extra.body.code]).toEqual([400, 'INVALID_PARAMETERS']);
  });

  it('list: a directory\'s entries, by name, with truncated past the limit', async () => {
    const root = await call(reader, 'files', 'list');
    expect(root.status).toBe(200);
    expect(root.body.entries.map((e: { name: string; type: string; size?: number }) => [e.name, e.type, e.size])).toEqual([
      ['a.txt', 'file', 5], ['escape', 'other', undefined], ['sub', 'directory', undefined],
    ]);
    const sub = await call(reader, 'files', 'list', 'path::sub;limit::2');
    expect(sub.body).toMatchObject({ path: 'sub', truncated: true });
    expect(sub.body.entries).toHaveLength(2);
    expect((await call(reader, 'files', 'list', 'path::sub%2F')).body.entries).toHaveLength(3);
  });

  it('list: no path leaves the root, and every bad path is a clear 4xx', async () => {
    const cases: [string, number, string][] = [
      ['..%2Fx', 403, 'PATH_ESCAPE'],
      ['..', 403, 'PATH_ESCAPE'],
      ['%2Fetc', 403, 'PATH_ESCAPE'],
      ['a%2F%2Fb', 403, 'PATH_ESCAPE'],
      ['sub%2F.%2F', 403, 'PATH_ESCAPE'],
      ['escape', 403, 'PATH_ESCAPE'],
      ['escape%2Ffiles', 403, 'PATH_ESCAPE'],
      ['a.txt', 409, 'NOT_A_DIRECTORY'],
      ['nope', 404, 'ENTRY_NOT_FOUND'],
      [encodeURIComponent(`${'a/'.repeat(200)}a`), 404, 'ENTRY_NOT_FOUND'],
      ['x'.repeat(300), 400, 'INVALID_NAME'],
      ['a%00b', 400, 'INVALID_NAME'],
    ];
    for (const [p, status, code] of cases) {
      const res = await call(reader, 'files', 'list', `path::${p}`);
      expect([p.slice(0, 30), res.status, res.body.code]).toEqual([p.slice(0, 30), status, code]);
      expect(JSON.stringify(res.body)).not.toContain(rt.dataDir);
    }
    const long = await alice.post('/v1/services/files/function/list', { path: 'a/'.repeat(3000) });
    expect([long.status, long.body.code]).toEqual([400, 'INVALID_PARAMETERS']);
    for (const limit of ['0', '10001', '1.5', 'x']) {
      const res = await call(reader, 'files', 'list', `limit::${limit}`);
      expect([limit, res.status, res.body.code]).toEqual([limit, 400, 'INVALID_PARAMETERS']);
    }
  });
});

describe('the hot folder\'s pending function', () => {
  it('shows unstable, waiting and claimed files of each folder; ignores what its rules leave alone', async () => {
    await mkdir(drop, { recursive: true });
    await writeFile(path.join(drop, 'new.pdf'), 'arriving');
    await writeFile(path.join(drop, 'old.pdf'), 'stable');
    const past = new Date(Date.now() - 3_600_000);
    await utimes(path.join(drop, 'old.pdf'), past, past);
    await writeFile(path.join(drop, 'copying.tmp'), 'excluded');
    await intakeFileStore(rt.services.db, 'drop').claim({
      source: drop, name: 'taking.pdf', size: 3, mtimeMs: null, ino: null, sha256: 'a'.repeat(64), docUuid: null, tid: null,
    });
    const res = await call(reader, 'drop', 'pending');
    expect(res.status).toBe(200);
    const [first, second] = res.body.folders;
    expect(first).toMatchObject({ path: 'drop', ignored: 1, truncated: false });
    expect(first.files.map((f: { name: string; state: string }) => [f.name, f.state])).toEqual([
      ['new.pdf', 'unstable'], ['old.pdf', 'waiting'], ['taking.pdf', 'claimed'],
    ]);
    expect(second).toMatchObject({ path: 'drop2', files: [] });
    const one = await call(reader, 'drop', 'pending', 'folder::drop2');
    expect(one.body.folders.map((f: { path: string }) => f.path)).toEqual(['drop2']);
    const unknown = await call(reader, 'drop', 'pending', `folder::${encodeURIComponent('../files')}`);
    expect([unknown.status, unknown.body.code]).toEqual([400, 'INVALID_PARAMETERS']);
    expect(JSON.stringify(res.body)).not.toContain(rt.dataDir);
  });
});
