import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../../helpers/databases.js';
import { expectError, rawJson, type TestClient } from '../../helpers/client.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Every row and status of the spec's Configuration table over HTTP against
 * real PostgreSQL and Redis (responses checked against the OpenAPI
 * document): get by path, keys below a path (all keys for an empty or absent
 * path), put, delete of a leaf or a subtree, rights from the `configuration`
 * area, and malformed paths and bodies that change nothing.
 */

let rt: TestRuntime;
let admin: TestClient;
let operator: TestClient;
let user: TestClient;

const enc = encodeURIComponent;
const put = async (path: string, value: unknown) => {
  const res = await admin.put(`/v1/config?path=${enc(path)}`, value);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
};
const items = () => countRows(rt.services.db, 'config_items');

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { server: { jsonLimit: '16kb' } } });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
  user = rt.client.withToken(await rt.token('ann', ['user']));
});
afterAll(() => rt.close());

describe('GET /config', () => {
  it('404 for keys of an empty tree and for a missing item', async () => {
    expectError(await admin.get('/v1/config?keys'), 404, 'CONFIG_NOT_FOUND');
    expectError(await admin.get('/v1/config?path=nothing/here'), 404, 'CONFIG_NOT_FOUND');
  });

  it('stores, reads back and lists keys recursively below a path (all keys for an empty or absent path)', async () => {
    expect(await put('ui/theme', { colour: 'blue', sizes: [1, 2] })).toEqual({ colour: 'blue', sizes: [1, 2] });
    await put('ui/layout/main', { cols: 2 });
    await put('ui/layout/side', { cols: 1 });
    await put('ui-extra', { x: 1 });
    await put('print/defaults', { copies: 1 });
    const got = await operator.get('/v1/config?path=ui/theme');
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ colour: 'blue', sizes: [1, 2] });
    expect((await operator.get('/v1/config?path=/ui/theme')).body).toEqual(got.body);

    const all = ['print/defaults', 'ui-extra', 'ui/layout/main', 'ui/layout/side', 'ui/theme'];
    expect((await operator.get('/v1/config?keys')).body).toEqual(all);
    expect((await operator.get('/v1/config?keys=true&path=')).body).toEqual(all);
    expect((await operator.get('/v1/config?keys=1&path=/')).body).toEqual(all);
    // strictly below the path, never a sibling that merely shares its prefix (ui-extra)
    expect((await operator.get('/v1/config?path=ui&keys')).body).toEqual(['ui/layout/main', 'ui/layout/side', 'ui/theme']);
    expect((await operator.get('/v1/config?path=ui/layout&keys=true')).body).toEqual(['ui/layout/main', 'ui/layout/side']);
    expectError(await operator.get('/v1/config?path=ui/theme&keys'), 404, 'CONFIG_NOT_FOUND');
    // an interior node holds no item of its own
    expectError(await operator.get('/v1/config?path=ui'), 404, 'CONFIG_NOT_FOUND');
    expect((await operator.get('/v1/config?path=ui/theme&keys=false')).body).toEqual(got.body);
  });

  it('lets an item have items below it, and treats % and _ as plain characters', async () => {
    await put('node', { own: true });
    await put('node/child', { c: 1 });
    await put('p%_q/a', { v: 1 });
    await put('pxyq/b', { v: 2 });
    expect((await admin.get('/v1/config?path=node')).body).toEqual({ own: true });
    expect((await admin.get('/v1/config?path=node&keys')).body).toEqual(['node/child']);
    expect((await admin.get(`/v1/config?path=${enc('p%_q')}&keys`)).body).toEqual(['p%_q/a']);
  });

  it('streams a large key listing', async () => {
    const n = 1500;
    await rt.services.db.query(`INSERT INTO config_items (path, value, modifier) SELECT 'bulk/k' || lpad(i::text, 5, '0'), '{}', 'test' FROM generate_series(1, $1) i`, [n]);
    const res = await admin.get('/v1/config?path=bulk&keys');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(n);
    expect(res.body[0]).toBe('bulk/k00001');
    expect(res.body[n - 1]).toBe(`bulk/k${String(n).padStart(5, '0')}`);
    await admin.delete('/v1/config?path=bulk');
  });
});

describe('PUT /config', () => {
  it('creates or replaces an item and answers it', async () => {
    await put('replace/me', { a: 1, b: 2 });
    expect(await put('replace/me', { c: 3 })).toEqual({ c: 3 });
    expect((await admin.get('/v1/config?path=replace/me')).body).toEqual({ c: 3 });
    expect(await put('unicode/ключ/日本', { ok: true })).toEqual({ ok: true });
    expect((await admin.get(`/v1/config?path=${enc('unicode/ключ')}&keys`)).body).toEqual(['unicode/ключ/日本']);
  });
});

describe('DELETE /config', () => {
  it('deletes a leaf, or the whole subtree below a path that is not a leaf; 404 when nothing is there', async () => {
    await put('del/a', { v: 1 });
    await put('del/b/c', { v: 2 });
    await put('del/b/d/e', { v: 3 });
    await put('delx', { v: 4 });
    const leaf = await admin.delete('/v1/config?path=del/a');
    expect(leaf.status).toBe(200);
    expect(leaf.body).toEqual({ path: 'del/a', deleted: 1 });
    const tree = await admin.delete('/v1/config?path=/del');
    expect(tree.body).toEqual({ path: 'del', deleted: 2 });
    expectError(await admin.get('/v1/config?path=del&keys'), 404, 'CONFIG_NOT_FOUND');
    expect((await admin.get('/v1/config?path=delx')).body).toEqual({ v: 4 });
    expectError(await admin.delete('/v1/config?path=del'), 404, 'CONFIG_NOT_FOUND');
  });
});

describe('rights (the configuration area)', () => {
  it('operators read but do not change; users have no right at all (403 whatever they send)', async () => {
    await put('rights/x', { v: 1 });
    const before = await items();
    expect((await operator.get('/v1/config?path=rights/x')).status).toBe(200);
    expectError(await operator.put('/v1/config?path=rights/x', { v: 2 }), 403, 'FORBIDDEN');
    expectError(await operator.delete('/v1/config?path=rights/x'), 403, 'FORBIDDEN');
    expectError(await user.get('/v1/config?path=rights/x'), 403, 'FORBIDDEN');
    expectError(await user.get('/v1/config?keys'), 403, 'FORBIDDEN');
    expectError(await user.put('/v1/config?path=rights/x', { v: 2 }), 403, 'FORBIDDEN');
    expectError(await user.delete('/v1/config?path=rights'), 403, 'FORBIDDEN');
    // refused for the right before the input is looked at
    expectError(await user.get('/v1/config?path=../x'), 403, 'FORBIDDEN');
    expectError(await operator.put('/v1/config?path=a//b', [1]), 403, 'FORBIDDEN');
    expect(await items()).toBe(before);
    expect((await admin.get('/v1/config?path=rights/x')).body).toEqual({ v: 1 });
  });
});

describe('bad input changes nothing', () => {
  it('refuses malformed paths with 400 INVALID_CONFIG_PATH on every method', async () => {
    await put('safe/item', { v: 1 });
    const before = await items();
    const bad = [
      '../x', 'a/../b', './a', 'a/.', '..', 'a//b', 'a/', '//a', '/', 'a\\b', 'a/__proto__', '__proto__',
      'a/\u0007', `${'d/'.repeat(32)}x`, 'x'.repeat(129), `${'abcdefgh/'.repeat(120)}z`,
    ];
    for (const path of bad) {
      for (const [method, json] of [['GET', undefined], ['PUT', { v: 2 }], ['DELETE', undefined]] as const) {
        if (path === '/' && method === 'GET') continue; // the root: GET needs a path (or keys), answered below
        const res = await admin.request(method, `/v1/config?path=${enc(path)}`, { json });
        expectError(res, 400, 'INVALID_CONFIG_PATH', { label: `${method} ${JSON.stringify(path.slice(0, 40))}`, noStackTrace: true });
      }
    }
    expectError(await admin.get('/v1/config'), 400, 'INVALID_CONFIG_PATH');
    expectError(await admin.get('/v1/config?path='), 400, 'INVALID_CONFIG_PATH');
    expectError(await admin.put('/v1/config', { v: 1 }), 400, 'INVALID_CONFIG_PATH');
    expectError(await admin.delete('/v1/config?path=/'), 400, 'INVALID_CONFIG_PATH');
    expectError(await admin.get('/v1/config?keys&path=a//b'), 400, 'INVALID_CONFIG_PATH');
    expectError(await admin.get(`/v1/config?path=a${enc('\u0000')}`), 400, 'INVALID_CONFIG_PATH');
    // the deepest and longest accepted paths work
    expect(await put(`${'d/'.repeat(31)}x`, { deep: true })).toEqual({ deep: true });
    expect(await put(`${'y'.repeat(128)}/z`, { long: true })).toEqual({ long: true });
    await admin.delete('/v1/config?path=d');
    await admin.delete(`/v1/config?path=${'y'.repeat(128)}`);
    expect(await items()).toBe(before);
  });

  it('refuses bad query parameters and bodies: 400/413/415, nothing stored', async () => {
    const before = await items();
    const cases: [string, Awaited<ReturnType<TestClient['get']>>, number, string][] = [
      ['path twice', await admin.get('/v1/config?path=a&path=b'), 400, 'INVALID_QUERY'],
      ['unknown parameter', await admin.get('/v1/config?path=a&depth=2'), 400, 'INVALID_QUERY'],
      ['keys on PUT', await admin.put('/v1/config?path=a&keys', { v: 1 }), 400, 'INVALID_QUERY'],
      ['keys=maybe', await admin.get('/v1/config?keys=maybe'), 400, 'INVALID_QUERY'],
      ['array body', await admin.put('/v1/config?path=a', [1, 2]), 400, 'VALIDATION_FAILED'],
      ['string body', await admin.put('/v1/config?path=a', 'x'), 400, 'VALIDATION_FAILED'],
      ['null body', await admin.request('PUT', '/v1/config?path=a', rawJson('null')), 400, 'VALIDATION_FAILED'],
      ['no body', await admin.request('PUT', '/v1/config?path=a'), 400, 'BODY_REQUIRED'],
      ['bad JSON', await admin.request('PUT', '/v1/config?path=a', rawJson('{')), 400, 'INVALID_JSON'],
      ['__proto__ key', await admin.request('PUT', '/v1/config?path=a', rawJson('{"__proto__":{"polluted":1}}')), 400, 'INVALID_KEY'],
      ['deep __proto__', await admin.request('PUT', '/v1/config?path=a', rawJson('{"x":[{"__proto__":1}]}')), 400, 'INVALID_KEY'],
      ['lone surrogate', await admin.request('PUT', '/v1/config?path=a', rawJson('{"k":"\\udc00"}')), 400, 'VALIDATION_FAILED'],
      ['too deep', await admin.request('PUT', '/v1/config?path=a', rawJson(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`)), 400, 'JSON_TOO_DEEP'],
      ['oversized', await admin.put('/v1/config?path=a', { blob: 'x'.repeat(20_000) }), 413, 'PAYLOAD_TOO_LARGE'],
      ['not JSON', await admin.request('PUT', '/v1/config?path=a', { body: 'a=1', headers: { 'content-type': 'text/plain' } }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
    ];
    for (const [label, res, status, code] of cases) expectError(res, status, code, { label, noStackTrace: true });
    expect(await items()).toBe(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('keeps segments and keys named like Object.prototype members as plain names', async () => {
    expect(await put('constructor/prototype', { toString: 'x', constructor: 1 })).toEqual({ toString: 'x', constructor: 1 });
    expect((await admin.get('/v1/config?path=constructor&keys')).body).toEqual(['constructor/prototype']);
    expect((await admin.get('/v1/config?path=constructor/prototype')).body).toEqual({ toString: 'x', constructor: 1 });
    expect((await admin.delete('/v1/config?path=constructor')).body).toEqual({ path: 'constructor', deleted: 1 });
  });
});
