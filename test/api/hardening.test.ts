import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { expectError, rawJson, type TestClient } from '../helpers/client.js';

/**
 * Input that used to reach SQL or Object.prototype and answer 500: prototype
 * names in queries and roles, `__proto__` and NUL in JSON bodies, NUL in query
 * strings, and regular expressions JavaScript accepts but PostgreSQL does not.
 * Each answers a 4xx error body, changes nothing, and the server keeps serving.
 */
const base = '/v1/services/store/repo';
const PROTO_NAMES = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'isPrototypeOf'];
const PG_INVALID_REGEXES = ['/a{99999}/', '/x{1000}/i', '/\\1/', '/(?<n>a)\\k<n>/', '/\\p{L}/', '/[[:foo:]]/'];

async function snapshot(rt: TestRuntime): Promise<string> {
  const { rows } = await rt.services.db.query('SELECT uuid, name, metadata, owner, modified FROM entries ORDER BY uuid');
  const cmds = await rt.services.db.query('SELECT cid FROM commands ORDER BY cid');
  return JSON.stringify([rows, cmds.rows]);
}

describe.each(['postgres', 'pglite'] as const)('hardening on %s', (db) => {
  let rt: TestRuntime;
  let api: TestClient;
  let col: string;
  let empty: string;
  let doc: string;

  beforeAll(async () => {
    rt = await startTestRuntime({ db });
    api = rt.client.withToken(await rt.token('alice', ['admin']));
    col = (await api.post(base, { name: 'col', type: 'collection' })).body.uuid;
    empty = (await api.post(base, { name: 'empty', type: 'collection' })).body.uuid;
    doc = (await api.post(`${base}/${col}`, { name: 'doc.txt', metadata: { constructor: 'yes', toString: 'no', n: 1 } })).body.uuid;
    await api.post(`${base}/${col}`, { name: 'other.txt', metadata: { n: 2 } });
  }, 180_000); // an embedded database starting on a loaded machine
  afterAll(() => rt?.close());

  it('prototype names as sort keys and filters are ordinary metadata paths (no 500)', async () => {
    for (const name of PROTO_NAMES) {
      for (const q of [`sort=${name}`, `sort=-${name},name`, `${name}=x`, `metadata.${name}=x`, `${name}=${encodeURIComponent('/x/i')}`]) {
        const listing = await api.get(`${base}?${q}`);
        expect(listing.status, q).toBe(200);
        const children = await api.get(`${base}/${col}/children?${q}`);
        expect([200, 404], `${q}: ${JSON.stringify(children.body)}`).toContain(children.status);
        if (children.status === 404) expect(children.body.code).toBe('NO_CHILDREN');
      }
    }
    // and they really are metadata keys: the entry stored with them is found by them
    const found = await api.get(`${base}/${col}/children?constructor=yes&toString=no`);
    expect(found.body.map((e: { uuid: string }) => e.uuid)).toEqual([doc]);
    const sorted = await api.get(`${base}/${col}/children?sort=-constructor`);
    expect(sorted.body.map((e: { name: string }) => e.name)).toEqual(['doc.txt', 'other.txt']);
  });

  it('prototype names as roles are unknown roles: 403 everywhere, never 500, never a pass', async () => {
    for (const role of PROTO_NAMES) {
      const stranger = rt.client.withToken(await rt.token(`u-${role}`, [role]));
      expectError(await stranger.get('/v1/services'), 403, 'NO_ROLE', { label: role });
      expectError(await stranger.get(base), 403, 'FORBIDDEN', { label: role });
      expectError(await stranger.get(`${base}/${col}/children`), 403, 'FORBIDDEN', { label: role });
      expectError(await stranger.post(base, { name: `by-${role}`, type: 'document' }), 403, 'FORBIDDEN', { label: role });
      expectError(await stranger.get(`${base}/command/${randomUUID()}`), 403, 'FORBIDDEN', { label: role });
    }
    // next to a real role they change nothing: this caller is a plain user
    const mixed = rt.client.withToken(await rt.token('mixed', ['constructor', 'user', 'valueOf']));
    expect((await mixed.get('/v1/services')).status).toBe(200);
    expectError(await mixed.get(`${base}/${doc}`), 403, 'NOT_OWNER');
    // a role claim that is itself a prototype name in the claims object
    const weird = rt.client.withToken(await rt.token('weird', [], { claims: { roles: { __proto__: ['admin'] } } }));
    expectError(await weird.get('/v1/services'), 403, 'NO_ROLE');
  });

  it('__proto__ keys in JSON bodies: 400 INVALID_KEY, nothing stored or merged', async () => {
    const before = await snapshot(rt);
    const bodies = [
      '{"name":"p1","metadata":{"__proto__":{"x":1}}}',
      '{"name":"p2","metadata":{"a":{"b":{"__proto__":{"x":1}}}}}',
      '{"name":"p3","metadata":{"\\u005f_proto__":{"x":1}}}', // the same key, escaped
      '{"__proto__":{"name":"p4"},"name":"p4"}',
    ];
    for (const text of bodies) {
      expectError(await api.request('POST', base, rawJson(text)), 400, 'INVALID_KEY', { label: text });
      expectError(await api.request('PATCH', `${base}/${doc}`, rawJson(text)), 400, 'INVALID_KEY', { label: text });
      expectError(await api.request('PUT', `${base}/${doc}`, rawJson(text)), 400, 'INVALID_KEY', { label: text });
    }
    expectError(await api.request('POST', `${base}/command`, rawJson('{"command":"delete","parameters":{"source":"x","__proto__":{"force":true}}}')), 400, 'INVALID_KEY');
    expect(await snapshot(rt)).toBe(before);
    expect(Object.prototype).not.toHaveProperty('x');
  });

  it('other prototype names are plain metadata keys, stored and merged as such', async () => {
    const made = await api.post(base, { name: 'keys.txt', metadata: { constructor: { a: 1 }, toString: 's', hasOwnProperty: 0 } });
    expect(made.status).toBe(200);
    const merged = await api.patch(`${base}/${made.body.uuid}`, { metadata: { constructor: { b: 2 }, valueOf: true } });
    expect(merged.status).toBe(200);
    expect(merged.body.metadata).toEqual({ constructor: { a: 1, b: 2 }, toString: 's', hasOwnProperty: 0, valueOf: true });
    expect((await api.get(`${base}/${made.body.uuid}`)).body.metadata).toEqual(merged.body.metadata);
  });

  it('NUL in JSON bodies (values, keys, names; escaped as JSON must): 400 INVALID_CHARACTER, nothing changed', async () => {
    const before = await snapshot(rt);
    const cases: [string, string, string][] = [
      ['POST', base, '{"name":"a\\u0000b","type":"document"}'],
      ['POST', base, '{"name":"ok","metadata":{"k":"v\\u0000"}}'],
      ['POST', base, '{"name":"ok","metadata":{"k\\u0000":"v"}}'],
      ['POST', base, '{"name":"ok","metadata":{"deep":[1,{"x":["\\u0000"]}]}}'],
      ['PATCH', `${base}/${doc}`, '{"metadata":{"k":"\\u0000"}}'],
      ['PUT', `${base}/${doc}`, '{"name":"doc.txt","metadata":{"\\u0000":1}}'],
      ['PATCH', `${base}/${doc}`, '{"owner":"bob\\u0000"}'],
      ['POST', `${base}/command`, '{"command":"import","parameters":{"url":"http://example.com/\\u0000"}}'],
      ['POST', '/v1/repo/inactives', '["\\u0000"]'],
    ];
    for (const [method, path, text] of cases) expectError(await api.request(method, path, rawJson(text)), 400, 'INVALID_CHARACTER', { label: text });
    // a backslash followed by "u0000" is text, not NUL
    const literal = await api.request('POST', base, rawJson('{"name":"lit","metadata":{"k":"\\\\u0000"}}'));
    expect(literal.status).toBe(200);
    expect(literal.body.metadata.k).toBe('\\u0000');
    await api.delete(`${base}/${literal.body.uuid}`);
    expect(await snapshot(rt)).toBe(before);
  });

  it('NUL in query filter values, filter names and sort keys: 400 INVALID_CHARACTER', async () => {
    for (const q of ['name=%00', 'name=a%00b', 'metadata.k=%00', 'a%00b=1', 'metadata.a%00=1', 'sort=na%00me', `name=${encodeURIComponent('/a\u0000/')}`]) {
      expectError(await api.get(`${base}?${q}`), 400, 'INVALID_CHARACTER', { label: q });
      expectError(await api.get(`${base}/${col}/children?${q}`), 400, 'INVALID_CHARACTER', { label: q });
    }
  });

  it('JSON nested deeper than 64 levels: 400 JSON_TOO_DEEP (storing it would overflow the stack)', async () => {
    const deep = `{"name":"deep","metadata":{"a":${'['.repeat(100_000)}${']'.repeat(100_000)}}}`;
    expectError(await api.request('POST', base, rawJson(deep)), 400, 'JSON_TOO_DEEP');
    // within the metadata limit (32 levels, metadata-rules.ts)
    const fine = `{"name":"nested","metadata":{"a":${'['.repeat(30)}1${']'.repeat(30)}}}`;
    expect((await api.request('POST', base, rawJson(fine))).status).toBe(200);
  });

  it('regular expressions valid in JavaScript but not in PostgreSQL: 400 INVALID_FILTER, with rows and without', async () => {
    for (const rx of PG_INVALID_REGEXES) {
      const q = `name=${encodeURIComponent(rx)}`;
      expectError(await api.get(`${base}?${q}`), 400, 'INVALID_FILTER', { label: rx });
      expectError(await api.get(`${base}/${col}/children?${q}`), 400, 'INVALID_FILTER', { label: rx });
      // an empty collection reads no row; the pattern is judged all the same
      expectError(await api.get(`${base}/${empty}/children?${q}`), 400, 'INVALID_FILTER', { label: `${rx} (empty)` });
      expectError(await api.get(`${base}/${col}/children?metadata.n=${encodeURIComponent(rx)}&sort=-name`), 400, 'INVALID_FILTER', { label: rx });
    }
    // what both dialects accept still works
    const ok = await api.get(`${base}/${col}/children?name=${encodeURIComponent('/^(?:doc)\\.txt$/')}`);
    expect(ok.body.map((e: { name: string }) => e.name)).toEqual(['doc.txt']);
  });

  it('after all of it the server is healthy and serving', async () => {
    expect((await rt.client.get('/healthz', { unchecked: true })).status).toBe(200);
    expect((await api.get(`${base}/${col}/children`)).status).toBe(200);
  });
});
