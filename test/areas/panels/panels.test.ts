import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../../helpers/databases.js';
import { expectError, rawJson, type TestClient } from '../../helpers/client.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Every row and status of the spec's Panels table over HTTP against real
 * PostgreSQL and Redis (responses checked against openapi/workflow-api.yaml
 * by the client): the read-only defaults (`/v1/ui`, 403 on any change), the
 * user panels (`/v1/panels`: filters, 404 when none, x-owner, generated pid
 * and name, 409 for a name in use, taskId and serviceId, rename, delete
 * answering the configuration), rights, and bad input that changes nothing.
 */

let rt: TestRuntime;
let ann: TestClient;
let bob: TestClient;
let admin: TestClient;
let reader: TestClient;
let guest: TestClient;
let operator: TestClient;

const PANELS = {
  tasks: { name: 'Tasks', type: 'tasks', service: 'work', columns: ['name', 'status'] },
  printers: { name: 'Printers', type: 'printers', roles: ['admin'] },
};

async function create(c: TestClient, body: unknown, headers?: Record<string, string>) {
  const res = await c.post('/v1/panels', body, { headers });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Record<string, unknown> & { pid: string; name: string };
}
const panelRows = () => countRows(rt.services.db, 'panels');

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      ui: { panels: PANELS },
      services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 10 } } } },
      server: { jsonLimit: '16kb' },
      // a role with no panels right at all
      auth: { roles: { guest: { areas: { documents: { scope: 'own', actions: ['read'] } } } } },
    },
  });
  ann = rt.client.withToken(await rt.token('ann', ['user'], { email: 'ann@example.com' }));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  reader = rt.client.withToken(await rt.token('rita', ['readonly']));
  guest = rt.client.withToken(await rt.token('gus', ['guest']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
});
afterAll(() => rt.close());

describe('GET /ui and /ui/{pid}: the default panels', () => {
  it('answers the defaults shown to the caller, in configuration order, read-only', async () => {
    const res = await ann.get('/v1/ui');
    expect(res.status).toBe(200);
    // config/default.yaml's defaults (tasks, documents, printers) under this test's overrides
    expect(res.body[0]).toEqual({ pid: 'tasks', name: 'Tasks', type: 'tasks', service: 'work', columns: ['name', 'status'], readonly: true, links: { self: { href: '/v1/ui/tasks' } } });
    expect(res.body.map((p: { pid: string }) => p.pid)).toEqual(['tasks', 'documents']);
    const all = await admin.get('/v1/ui');
    expect(all.body.map((p: { pid: string }) => p.pid)).toEqual(['tasks', 'documents', 'printers']);
    // the roles a default is shown to are the server's business
    expect(all.body[1]).not.toHaveProperty('roles');
    expect((await reader.get('/v1/ui')).status).toBe(200);
  });

  it('answers one default panel; 404 for an unknown id or one not shown to the caller; 403 without the right', async () => {
    const one = await ann.get('/v1/ui/tasks');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ pid: 'tasks', name: 'Tasks', readonly: true });
    expectError(await ann.get('/v1/ui/printers'), 404, 'PANEL_NOT_FOUND');
    expect((await admin.get('/v1/ui/printers')).body.name).toBe('Printers');
    expectError(await ann.get('/v1/ui/nope'), 404, 'PANEL_NOT_FOUND');
    expectError(await ann.get('/v1/ui/constructor'), 404, 'PANEL_NOT_FOUND');
    expectError(await guest.get('/v1/ui'), 403, 'FORBIDDEN');
    expectError(await guest.get('/v1/ui/tasks'), 403, 'FORBIDDEN');
  });

  it('refuses every change of a default panel with 403 (404 for an id that is none), even for admins', async () => {
    for (const c of [ann, admin]) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        expectError(await c.request(method, '/v1/ui', { json: { name: 'x' } }), 403, 'PANEL_READONLY', { label: `${method} /ui` });
        expectError(await c.request(method, '/v1/ui/tasks', { json: { name: 'x' } }), 403, 'PANEL_READONLY', { label: `${method} /ui/tasks` });
        expectError(await c.request(method, '/v1/ui/nope'), 404, 'PANEL_NOT_FOUND', { label: `${method} /ui/nope` });
      }
    }
    expectError(await guest.delete('/v1/ui/tasks'), 403, 'FORBIDDEN');
    expect((await ann.get('/v1/ui/tasks')).body.name).toBe('Tasks');
  });

  it('addresses a default panel under /panels/{pid}: readable, 403 PANEL_READONLY on PUT and DELETE', async () => {
    const res = await ann.get('/v1/panels/tasks');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ pid: 'tasks', readonly: true });
    expectError(await ann.put('/v1/panels/tasks', { name: 'Mine' }), 403, 'PANEL_READONLY');
    expectError(await admin.delete('/v1/panels/tasks'), 403, 'PANEL_READONLY');
    expectError(await ann.get('/v1/panels/printers'), 404, 'PANEL_NOT_FOUND');
  });
});

describe('POST /panels', () => {
  it('creates with a generated pid, keeps the configuration, and generates free names when none is given', async () => {
    const c = rt.client.withToken(await rt.token('gen', ['user']));
    const first = await create(c, { type: 'chart', options: { colour: 'red', series: [1, 2] } });
    expect(first).toMatchObject({
      name: 'Panel 1', type: 'chart', options: { colour: 'red', series: [1, 2] }, readonly: false, creator: 'gen', owner: null,
      links: { self: { href: `/v1/panels/${first.pid}` } },
    });
    expect(first.pid).toMatch(/^[0-9a-f-]{36}$/);
    await create(c, { name: 'Panel 3' });
    const second = await create(c, {});
    const fourth = await create(c, {});
    expect([second.name, fourth.name]).toEqual(['Panel 2', 'Panel 4']);
    // the server's own fields sent back are ignored
    const echoed = await create(c, { ...first, name: 'Copy', pid: randomUUID(), creator: 'mallory', owner: 'x', readonly: true, created: '2000-01-01T00:00:00Z' });
    expect(echoed).toMatchObject({ name: 'Copy', creator: 'gen', owner: null, readonly: false, type: 'chart' });
    expect(echoed.pid).not.toBe(first.pid);
    expect(echoed.created).not.toBe('2000-01-01T00:00:00.000Z');
  });

  it('gives concurrent creates without a name distinct names', async () => {
    const c = rt.client.withToken(await rt.token('racer', ['user']));
    const made = await Promise.all(Array.from({ length: 8 }, () => c.post('/v1/panels', {})));
    expect(made.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(new Set(made.map((r) => r.body.name)).size).toBe(8);
  });

  it('of concurrent creates with one name, exactly one wins; the others are 409', async () => {
    const c = rt.client.withToken(await rt.token('twins', ['user']));
    const made = await Promise.all(Array.from({ length: 6 }, () => c.post('/v1/panels', { name: 'Same' })));
    expect(made.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of made.filter((x) => x.status !== 200)) expectError(r, 409, 'NAME_EXISTS');
    expect((await c.get('/v1/panels')).body).toHaveLength(1);
  });

  it('409 NAME_EXISTS for a name the holder uses; another user may use it', async () => {
    await create(ann, { name: 'Overview' });
    const before = await panelRows();
    expectError(await ann.post('/v1/panels', { name: 'Overview', type: 'other' }), 409, 'NAME_EXISTS');
    expect(await panelRows()).toBe(before);
    expect((await create(bob, { name: 'Overview' })).creator).toBe('bob');
  });

  it('x-owner: the panel is held by the owner (their name space, their listing); impersonation needs the right', async () => {
    const forCarl = await create(admin, { name: 'Overview' }, { 'x-owner': 'carl' });
    expect(forCarl).toMatchObject({ creator: 'root', owner: 'carl' });
    expectError(await admin.post('/v1/panels', { name: 'Overview' }, { headers: { 'x-owner': 'carl' } }), 409, 'NAME_EXISTS');
    const carl = rt.client.withToken(await rt.token('carl', ['user']));
    expect((await carl.get('/v1/panels')).body.map((p: { pid: string }) => p.pid)).toEqual([forCarl.pid]);
    // one's own identity (email) as owner is no impersonation
    expect((await create(ann, { name: 'Mail' }, { 'x-owner': 'ann@example.com' })).owner).toBe('ann@example.com');
    const before = await panelRows();
    expectError(await ann.post('/v1/panels', { name: 'For bob' }, { headers: { 'x-owner': 'bob' } }), 403, 'IMPERSONATION_DENIED');
    expectError(await ann.post('/v1/panels', { name: 'x' }, { headers: { 'x-owner': 'o'.repeat(257) } }), 400, 'INVALID_OWNER');
    expect(await panelRows()).toBe(before);
  });

  it('taskId names a task the caller may see and assigns the panel to it; serviceId must be its service', async () => {
    const task = await ann.post('/v1/services/work/tasks', { name: 'watched' });
    expect(task.status).toBe(200);
    const tid = task.body.tid as string;
    const panel = await create(ann, { name: 'Watch', taskId: tid.toUpperCase(), serviceId: 'work', createpanel: '1' });
    expect(panel).toMatchObject({ taskId: tid, serviceId: 'work', createpanel: '1' });
    expect((await ann.get(`/v1/panels?taskId=${tid}`)).body.map((p: { pid: string }) => p.pid)).toEqual([panel.pid]);
    const before = await panelRows();
    expectError(await ann.post('/v1/panels', { taskId: tid, serviceId: 'store' }), 409, 'PANEL_SERVICE_MISMATCH');
    expectError(await ann.post('/v1/panels', { taskId: randomUUID() }), 409, 'PANEL_TASK_UNKNOWN');
    // another user's task looks exactly like a missing one
    const other = await bob.post('/v1/panels', { taskId: tid });
    expectError(other, 409, 'PANEL_TASK_UNKNOWN');
    expect(JSON.stringify(other.body)).not.toContain('watched');
    expectError(await ann.post('/v1/panels', { taskId: 'not-a-uuid' }), 400, 'VALIDATION_FAILED');
    expect(await panelRows()).toBe(before);
    // an operator sees all tasks, so may assign a panel to ann's
    expect((await create(operator, { taskId: tid })).taskId).toBe(tid);
  });

  it('403 without the write right, whatever the body', async () => {
    const before = await panelRows();
    expectError(await reader.post('/v1/panels', { name: 'R' }), 403, 'FORBIDDEN');
    expectError(await guest.post('/v1/panels', { name: 'G' }), 403, 'FORBIDDEN');
    expectError(await guest.post('/v1/panels', { name: 5 }), 403, 'FORBIDDEN');
    expect(await panelRows()).toBe(before);
  });
});

describe('GET /panels', () => {
  it('lists only the caller\'s own panels with property filters, sort and paging; 404 when none', async () => {
    const c = rt.client.withToken(await rt.token('lister', ['user']));
    expectError(await c.get('/v1/panels'), 404, 'NO_PANELS');
    await create(c, { name: 'B', type: 'chart', layout: { cols: 2 } });
    await create(c, { name: 'A', type: 'table', layout: { cols: 3 } });
    await create(c, { name: 'C', type: 'chart', layout: { cols: 3 } });
    const all = await c.get('/v1/panels');
    expect(all.status).toBe(200);
    expect(all.body.map((p: { name: string }) => p.name)).toEqual(['B', 'A', 'C']);
    expect((await c.get('/v1/panels?sort=name')).body.map((p: { name: string }) => p.name)).toEqual(['A', 'B', 'C']);
    expect((await c.get('/v1/panels?sort=-name&limit=1&offset=1')).body.map((p: { name: string }) => p.name)).toEqual(['B']);
    expect((await c.get('/v1/panels?type=chart&sort=name')).body.map((p: { name: string }) => p.name)).toEqual(['B', 'C']);
    expect((await c.get('/v1/panels?layout.cols=3&name=/^[a]$/i')).body.map((p: { name: string }) => p.name)).toEqual(['A']);
    expectError(await c.get('/v1/panels?type=nothing'), 404, 'NO_PANELS');
    expectError(await c.get('/v1/panels?offset=3'), 404, 'NO_PANELS');
    expectError(await c.get('/v1/panels?limit=501'), 400, 'INVALID_QUERY');
    expectError(await c.get('/v1/panels?a..b=1'), 400, 'INVALID_PROPERTY');
    expectError(await c.get('/v1/panels?sort=a..b'), 400, 'INVALID_PROPERTY');
    // a filter named like a prototype member is a configuration key like any other
    expectError(await c.get('/v1/panels?__proto__=x'), 404, 'NO_PANELS');
    // admins, too, list their own panels only (a UI shows these)
    expect((await admin.get('/v1/panels')).body.every((p: { creator: string }) => p.creator === 'root')).toBe(true);
    expectError(await guest.get('/v1/panels'), 403, 'FORBIDDEN');
  });
});

describe('GET, PUT and DELETE /panels/{pid}', () => {
  it('reads, replaces (the whole configuration), renames only to an unused name, and deletes answering the configuration', async () => {
    const c = rt.client.withToken(await rt.token('dora', ['user']));
    const p = await create(c, { name: 'One', type: 'chart', colour: 'red' });
    await create(c, { name: 'Two' });
    const got = await c.get(`/v1/panels/${p.pid}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(p);

    const replaced = await c.put(`/v1/panels/${p.pid}`, { type: 'table', rows: 5 });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({ pid: p.pid, name: 'One', type: 'table', rows: 5, created: p.created });
    expect(replaced.body).not.toHaveProperty('colour');
    expectError(await c.put(`/v1/panels/${p.pid}`, { name: 'Two' }), 409, 'NAME_EXISTS');
    expect((await c.get(`/v1/panels/${p.pid}`)).body.name).toBe('One');
    const renamed = await c.put(`/v1/panels/${p.pid}`, { ...replaced.body, name: 'Uno' });
    expect(renamed.body).toMatchObject({ name: 'Uno', type: 'table', rows: 5 });
    // the freed name can be taken again
    await create(c, { name: 'One' });

    const deleted = await c.delete(`/v1/panels/${p.pid}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body).toEqual((await Promise.resolve(renamed)).body);
    expectError(await c.get(`/v1/panels/${p.pid}`), 404, 'PANEL_NOT_FOUND');
    expectError(await c.delete(`/v1/panels/${p.pid}`), 404, 'PANEL_NOT_FOUND');
    expectError(await c.put(`/v1/panels/${p.pid}`, { name: 'x' }), 404, 'PANEL_NOT_FOUND');
  });

  it('another user\'s panel is absent (404, nothing shown) unless a role sees all; readonly may read but not change', async () => {
    const p = await create(ann, { name: 'Private', secret: 'ann-only' });
    for (const res of [await bob.get(`/v1/panels/${p.pid}`), await bob.put(`/v1/panels/${p.pid}`, { name: 'x' }), await bob.delete(`/v1/panels/${p.pid}`)]) {
      expectError(res, 404, 'PANEL_NOT_FOUND');
      expect(JSON.stringify(res.body)).not.toContain('ann-only');
    }
    expect((await admin.get(`/v1/panels/${p.pid}`)).body.secret).toBe('ann-only');
    const readerOwn = await create(admin, { name: 'For rita' }, { 'x-owner': 'rita' });
    expect((await reader.get(`/v1/panels/${readerOwn.pid}`)).status).toBe(200);
    expectError(await reader.put(`/v1/panels/${readerOwn.pid}`, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await reader.delete(`/v1/panels/${readerOwn.pid}`), 403, 'FORBIDDEN');
    expectError(await guest.get(`/v1/panels/${p.pid}`), 403, 'FORBIDDEN');
    // an admin changes it; the holder stays
    const changed = await admin.put(`/v1/panels/${p.pid}`, { name: 'Renamed by admin' });
    expect(changed.body).toMatchObject({ creator: 'ann', owner: null, name: 'Renamed by admin' });
    expectError(await ann.get(`/v1/panels/${randomUUID()}`), 404, 'PANEL_NOT_FOUND');
    expectError(await ann.get('/v1/panels/not-a-panel'), 404, 'PANEL_NOT_FOUND');
    for (const pid of ['__proto__', 'constructor', 'toString', 'x'.repeat(2000)]) {
      expectError(await ann.get(`/v1/panels/${pid}`), 404, 'PANEL_NOT_FOUND', { label: pid.slice(0, 20) });
      expectError(await ann.put(`/v1/panels/${pid}`, { name: 'x' }), 404, 'PANEL_NOT_FOUND', { label: pid.slice(0, 20) });
      expectError(await ann.delete(`/v1/panels/${pid}`), 404, 'PANEL_NOT_FOUND', { label: pid.slice(0, 20) });
      expectError(await ann.get(`/v1/ui/${pid}`), 404, 'PANEL_NOT_FOUND', { label: pid.slice(0, 20) });
    }
  });
});

describe('bad input changes nothing', () => {
  it('refuses bodies that are not panels: 400/413/415, no row written', async () => {
    const p = await create(ann, { name: 'Stable', keep: 1 });
    const before = await panelRows();
    const cases: [string, Awaited<ReturnType<TestClient['post']>>, number, string][] = [
      ['array', await ann.post('/v1/panels', [1, 2]), 400, 'VALIDATION_FAILED'],
      ['string', await ann.post('/v1/panels', 'x'), 400, 'VALIDATION_FAILED'],
      ['null', await ann.request('POST', '/v1/panels', rawJson('null')), 400, 'VALIDATION_FAILED'],
      ['no body', await ann.request('POST', '/v1/panels'), 400, 'BODY_REQUIRED'],
      ['bad json', await ann.request('POST', '/v1/panels', rawJson('{"name":')), 400, 'INVALID_JSON'],
      ['__proto__ key', await ann.request('POST', '/v1/panels', rawJson('{"name":"p","__proto__":{"admin":true}}')), 400, 'INVALID_KEY'],
      ['nested __proto__', await ann.request('POST', '/v1/panels', rawJson('{"a":{"__proto__":{"x":1}}}')), 400, 'INVALID_KEY'],
      ['control character in name', await ann.post('/v1/panels', { name: 'a\u0007b' }), 400, 'INVALID_NAME'],
      ['empty name', await ann.post('/v1/panels', { name: '' }), 400, 'INVALID_NAME'],
      ['name too long', await ann.post('/v1/panels', { name: 'n'.repeat(1025) }), 400, 'INVALID_NAME'],
      ['name not a string', await ann.post('/v1/panels', { name: 7 }), 400, 'VALIDATION_FAILED'],
      ['lone surrogate', await ann.request('POST', '/v1/panels', rawJson('{"k":"\\ud800"}')), 400, 'VALIDATION_FAILED'],
      ['NUL', await ann.request('POST', '/v1/panels', rawJson('{"k":"\\u0000"}')), 400, 'INVALID_CHARACTER'],
      ['too deep', await ann.request('POST', '/v1/panels', rawJson(`${'{"a":'.repeat(70)}1${'}'.repeat(70)}`)), 400, 'JSON_TOO_DEEP'],
      ['oversized', await ann.post('/v1/panels', { name: 'big', blob: 'x'.repeat(20_000) }), 413, 'PAYLOAD_TOO_LARGE'],
      ['not JSON', await ann.request('POST', '/v1/panels', { body: 'name=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE'],
      ['PUT oversized', await ann.put(`/v1/panels/${p.pid}`, { blob: 'x'.repeat(20_000) }), 413, 'PAYLOAD_TOO_LARGE'],
      ['PUT __proto__', await ann.request('PUT', `/v1/panels/${p.pid}`, rawJson('{"__proto__":{"x":1}}')), 400, 'INVALID_KEY'],
    ];
    for (const [label, res, status, code] of cases) expectError(res, status, code, { label, noStackTrace: true });
    expect(await panelRows()).toBe(before);
    expect((await ann.get(`/v1/panels/${p.pid}`)).body).toEqual(p);
  });

  it('keeps keys named like Object.prototype members as plain keys', async () => {
    const p = await create(ann, { name: 'Proto', constructor: { prototype: 'x' }, toString: 'y', hasOwnProperty: 1 });
    const back = await ann.get(`/v1/panels/${p.pid}`);
    expect(back.body).toMatchObject({ constructor: { prototype: 'x' }, toString: 'y', hasOwnProperty: 1 });
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect((await ann.get('/v1/panels?constructor.prototype=x')).body.map((r: { pid: string }) => r.pid)).toEqual([p.pid]);
  });
});
