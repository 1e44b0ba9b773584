import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { AREAS } from '../../../src/areas/index.js';
import { jobHandlers } from '../../../src/worker/handlers.js';

/** Every row and status of the spec's Messages table (plus GET and DELETE of one), over HTTP against real PostgreSQL and Redis. */

let rt: TestRuntime;
let alice: TestClient;
let bob: TestClient;
let reader: TestClient;
let admin: TestClient;

type Msg = { uuid: string; date: string; type: string; text: string; expires: string; user: string; metadata: Record<string, unknown>; source?: string };

const create = async (c: TestClient, body: Record<string, unknown>) => {
  const res = await c.post('/v1/messages', body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as Msg;
};
const stored = async () => (await rt.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM messages')).rows[0]!.n;

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { messages: { maxPerUser: 40 }, services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 0 } } } } } });
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  reader = rt.client.withToken(await rt.token('rita', ['readonly']));
  admin = rt.client.withToken(await rt.token('root', ['admin']));
});
afterAll(async () => {
  await rt.close();
});

describe('GET /messages', () => {
  it('404 NO_MESSAGES when none match, then only the own, unexpired ones, newest first', async () => {
    const none = await alice.get('/v1/messages');
    expect([none.status, none.body.code]).toEqual([404, 'NO_MESSAGES']);
    const a1 = await create(alice, { text: 'first', date: '2026-01-01T10:00:00Z', expires: '2099-01-01T00:00:00Z' });
    const a2 = await create(alice, { text: 'second', type: 'error', metadata: { job: { id: 7 } } });
    await create(bob, { text: 'bob only' });
    const res = await alice.get('/v1/messages');
    expect(res.status).toBe(200);
    expect(res.body.map((m: Msg) => m.uuid)).toEqual([a2.uuid, a1.uuid]);
    expect(res.body.every((m: Msg) => m.user === 'alice')).toBe(true);
  });

  it('filters by field, regular expression and metadata path; sorts; pages', async () => {
    const errors = await alice.get('/v1/messages?type=error');
    expect(errors.body.map((m: Msg) => m.text)).toEqual(['second']);
    const byRegex = await alice.get(`/v1/messages?text=${encodeURIComponent('/^FIR/i')}`);
    expect(byRegex.body.map((m: Msg) => m.text)).toEqual(['first']);
    const byMeta = await alice.get('/v1/messages?metadata.job.id=7');
    expect(byMeta.body.map((m: Msg) => m.text)).toEqual(['second']);
    const sorted = await alice.get('/v1/messages?sort=date');
    expect(sorted.body.map((m: Msg) => m.text)).toEqual(['first', 'second']);
    const byType = await alice.get('/v1/messages?sort=-type,text');
    expect(byType.body.map((m: Msg) => m.type)).toEqual(['info', 'error']);
    const page = await alice.get('/v1/messages?sort=date&offset=1&limit=1');
    expect(page.body.map((m: Msg) => m.text)).toEqual(['second']);
    const past = await alice.get('/v1/messages?offset=2');
    expect([past.status, past.body.code]).toEqual([404, 'NO_MESSAGES']);
    const nothing = await alice.get('/v1/messages?type=warning');
    expect(past.status).toBe(404);
    expect(nothing.body.code).toBe('NO_MESSAGES');
  });

  it('400 for a limit over 500, a bad property path, a prototype key or a bad regular expression', async () => {
    for (const [q, code] of [['limit=501', 'INVALID_QUERY'], ['sort=a..b', 'INVALID_PROPERTY'], ['text=%2F(%2F', 'INVALID_FILTER'], ['a%00b=1', 'INVALID_CHARACTER']] as const) {
      const res = await alice.get(`/v1/messages?${q}`);
      expect([q, res.status, res.body.code]).toEqual([q, 400, code]);
    }
    // prototype names are metadata paths like any other (bound parameters, never object lookups): no message has them
    for (const q of ['constructor=x', '__proto__.x=1', 'sort=__proto__']) {
      const res = await alice.get(`/v1/messages?${q}&type=none`);
      expect([q, res.status, res.body.code]).toEqual([q, 404, 'NO_MESSAGES']);
    }
  });
});

describe('POST /messages', () => {
  it('adds uuid and date when absent, keeps them when given; defaults type and expiry (7 days)', async () => {
    const before = Date.now();
    const m = await create(alice, { text: 'hello' });
    expect(m.uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Date.parse(m.date)).toBeGreaterThanOrEqual(before - 5000);
    expect(m.type).toBe('info');
    expect(Date.parse(m.expires) - Date.parse(m.date)).toBe(7 * 86_400_000);
    const uuid = randomUUID();
    const given = await create(alice, { uuid, date: '2026-05-01T08:00:00.000Z', text: 'dated', type: 'warning', source: 'backend', expires: '2099-01-01T00:00:00Z' });
    expect(given).toMatchObject({ uuid, date: '2026-05-01T08:00:00.000Z', type: 'warning', source: 'backend', expires: '2099-01-01T00:00:00.000Z', creator: 'alice' });
  });

  it('409 MESSAGE_EXISTS for a uuid in use, and nothing changes', async () => {
    const m = await create(alice, { text: 'once' });
    const n = await stored();
    const again = await bob.post('/v1/messages', { uuid: m.uuid, text: 'twice' });
    expect([again.status, again.body.code]).toEqual([409, 'MESSAGE_EXISTS']);
    expect(await stored()).toBe(n);
    expect((await alice.get(`/v1/messages/${m.uuid}`)).body.text).toBe('once');
  });

  it('for another user only with impersonate (403 otherwise); readonly may not post', async () => {
    const denied = await alice.post('/v1/messages', { text: 'to bob', user: 'bob' });
    expect([denied.status, denied.body.code]).toEqual([403, 'IMPERSONATION_DENIED']);
    const sent = await create(admin, { text: 'from the admin', user: 'bob' });
    expect(sent).toMatchObject({ user: 'bob', creator: 'root' });
    expect((await bob.get(`/v1/messages/${sent.uuid}`)).status).toBe(200);
    const ro = await reader.post('/v1/messages', { text: 'x' });
    expect([ro.status, ro.body.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('bad bodies are 400 (or 413, 415) and store nothing', async () => {
    const n = await stored();
    const cases: [unknown, number, string][] = [
      [{}, 400, 'VALIDATION_FAILED'],
      [{ text: '' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', type: 'fatal' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', unknown: 1 }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', uuid: 'not-a-uuid' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', date: 'yesterday' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', date: '2000-01-01T00:00:00Z' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', expires: '2001-01-01T00:00:00Z' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x'.repeat(2001) }, 400, 'VALIDATION_FAILED'],
      [{ text: 'lone \ud800 surrogate' }, 400, 'VALIDATION_FAILED'],
      [{ text: 'x', metadata: [1] }, 400, 'VALIDATION_FAILED'],
      [['x'], 400, 'VALIDATION_FAILED'],
    ];
    for (const [body, status, code] of cases) {
      const res = await alice.post('/v1/messages', body);
      expect([JSON.stringify(body).slice(0, 60), res.status, res.body.code]).toEqual([JSON.stringify(body).slice(0, 60), status, code]);
    }
    for (const raw of ['{"text":"x","__proto__":{"admin":true}}', '{"text":"x","metadata":{"__proto__":{"a":1}}}']) {
      const res = await alice.request('POST', '/v1/messages', { body: raw, headers: { 'content-type': 'application/json' } });
      expect([res.status, res.body.code]).toEqual([400, 'INVALID_KEY']);
    }
    const nul = await alice.request('POST', '/v1/messages', { body: '{"text":"a\\u0000b"}', headers: { 'content-type': 'application/json' } });
    expect([nul.status, nul.body.code]).toEqual([400, 'INVALID_CHARACTER']);
    const huge = await alice.request('POST', '/v1/messages', { body: JSON.stringify({ text: 'x', metadata: { pad: 'y'.repeat(2 * 1024 * 1024) } }), headers: { 'content-type': 'application/json' } });
    expect([huge.status, huge.body.code]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const text = await alice.request('POST', '/v1/messages', { body: 'text=x', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(await stored()).toBe(n);
  });

  it('409 MESSAGE_LIMIT_REACHED past messages.maxPerUser', async () => {
    const carol = rt.client.withToken(await rt.token('carol', ['user']));
    for (let i = 0; i < 40; i++) await create(carol, { text: `m${i}` });
    const over = await carol.post('/v1/messages', { text: 'one too many' });
    expect([over.status, over.body.code]).toEqual([409, 'MESSAGE_LIMIT_REACHED']);
  });
});

describe('GET, PATCH and DELETE /messages/{uuid}', () => {
  it('PATCH changes only what is given and merges metadata', async () => {
    const m = await create(alice, { text: 'draft', source: 's', metadata: { a: 1, b: { c: 2 } } });
    const res = await alice.patch(`/v1/messages/${m.uuid}`, { text: 'final', metadata: { b: { d: 3 }, e: 4 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uuid: m.uuid, date: m.date, type: 'info', text: 'final', source: 's', metadata: { a: 1, b: { d: 3 }, e: 4 } });
    const back = await alice.patch(`/v1/messages/${m.uuid}`, { ...res.body, type: 'warning' });
    expect([back.status, back.body.type, back.body.text]).toEqual([200, 'warning', 'final']);
    const cleared = await alice.patch(`/v1/messages/${m.uuid}`, { source: null });
    expect(cleared.body.source).toBeUndefined();
  });

  it('409 for a changed uuid or date, and nothing changes', async () => {
    const m = await create(alice, { text: 'fixed' });
    const uuid = await alice.patch(`/v1/messages/${m.uuid}`, { uuid: randomUUID(), text: 'changed' });
    expect([uuid.status, uuid.body.code]).toEqual([409, 'UUID_IMMUTABLE']);
    const date = await alice.patch(`/v1/messages/${m.uuid}`, { date: '2020-01-01T00:00:00Z', text: 'changed' });
    expect([date.status, date.body.code]).toEqual([409, 'DATE_IMMUTABLE']);
    const same = await alice.patch(`/v1/messages/${m.uuid}`, { uuid: m.uuid.toUpperCase(), date: m.date });
    expect(same.status).toBe(200);
    expect((await alice.get(`/v1/messages/${m.uuid}`)).body.text).toBe('fixed');
  });

  it('404 for a missing message and for another user\'s; 400 for a bad uuid or body', async () => {
    const m = await create(alice, { text: 'private' });
    for (const res of [await bob.get(`/v1/messages/${m.uuid}`), await bob.patch(`/v1/messages/${m.uuid}`, { text: 'x' }), await bob.delete(`/v1/messages/${m.uuid}`), await alice.patch(`/v1/messages/${randomUUID()}`, { text: 'x' })]) {
      expect([res.status, res.body.code]).toEqual([404, 'MESSAGE_NOT_FOUND']);
      expect(JSON.stringify(res.body)).not.toContain('private');
    }
    expect((await admin.get(`/v1/messages/${m.uuid}`)).body.text).toBe('private'); // all scope
    for (const id of ['not-a-uuid', '__proto__', 'constructor']) {
      const bad = await alice.patch(`/v1/messages/${id}`, { text: 'x' });
      expect([id, bad.status, bad.body.code]).toEqual([id, 400, 'INVALID_UUID']);
      expect((await alice.get(`/v1/messages/${id}`)).status).toBe(400);
    }
    const body = await alice.patch(`/v1/messages/${m.uuid}`, { type: 'fatal' });
    expect([body.status, body.body.code]).toEqual([400, 'VALIDATION_FAILED']);
    const proto = await alice.request('PATCH', `/v1/messages/${m.uuid}`, { body: '{"metadata":{"__proto__":{"x":1}}}', headers: { 'content-type': 'application/json' } });
    expect([proto.status, proto.body.code]).toEqual([400, 'INVALID_KEY']);
    expect((await alice.get(`/v1/messages/${m.uuid}`)).body.metadata).toEqual({});
  });

  it('DELETE dismisses the own message (readonly may not)', async () => {
    const m = await create(alice, { text: 'dismiss me' });
    const r = await create(admin, { text: 'for rita', user: 'rita' });
    const ro = await reader.delete(`/v1/messages/${r.uuid}`);
    expect([ro.status, ro.body.code]).toEqual([403, 'FORBIDDEN']);
    expect((await reader.get(`/v1/messages/${r.uuid}`)).status).toBe(200);
    expect((await alice.delete(`/v1/messages/${m.uuid}`)).status).toBe(204);
    expect((await alice.get(`/v1/messages/${m.uuid}`)).status).toBe(404);
  });
});

describe('expiry', () => {
  it('an expired message disappears at once and housekeeping deletes it', async () => {
    const m = await create(alice, { text: 'short-lived', expires: new Date(Date.now() + 1500).toISOString() });
    expect((await alice.get(`/v1/messages/${m.uuid}`)).status).toBe(200);
    await eventually(async () => ((await alice.get(`/v1/messages/${m.uuid}`)).status === 404 ? true : undefined));
    const listed = await alice.get('/v1/messages?limit=500');
    expect(listed.body.map((x: Msg) => x.uuid)).not.toContain(m.uuid);
    // the scheduled housekeeping job's handler, as a worker runs it
    await jobHandlers(rt.services, AREAS)['housekeeping.run']!({}, {} as never);
    const { rows } = await rt.services.db.query('SELECT 1 FROM messages WHERE uuid = $1', [m.uuid]);
    expect(rows).toHaveLength(0);
  });
});

describe('messages the runtime posts', () => {
  it('a task that fails posts one error message to its owner', async () => {
    const created = await alice.request('POST', '/v1/services/work/tasks', {
      body: JSON.stringify({ name: 'Nightly run', lists: { input: { embedded: { listItems: [{ href: 'https://d.example/a', metadata: { mock: { fail: 'broken' } } }] } } } }),
      headers: { 'content-type': 'application/json', 'x-owner': 'alice' },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const tid = created.body.tid as string;
    expect((await alice.post(`/v1/services/work/tasks/${tid}/action`, { action: 'start' })).status).toBe(204);
    const msg = await eventually(async () => {
      const res = await alice.get(`/v1/messages?href=${encodeURIComponent(`/v1/services/work/tasks/${tid}`)}`);
      return res.status === 200 ? (res.body as Msg[]) : undefined;
    });
    expect(msg).toHaveLength(1);
    expect(msg[0]).toMatchObject({ type: 'error', text: 'Task "Nightly run" failed', source: 'task:work', user: 'alice', creator: 'system:tasks' });
    // started again and failed again: a second failure, a second message
    expect((await alice.post(`/v1/services/work/tasks/${tid}/action`, { action: 'start' })).status).toBe(204);
    await eventually(async () => {
      const res = await alice.get(`/v1/messages?href=${encodeURIComponent(`/v1/services/work/tasks/${tid}`)}`);
      return res.status === 200 && res.body.length === 2 ? true : undefined;
    });
  });
});

describe('messages switched off (messages.enabled: false)', () => {
  it('every route is 404 NO_MESSAGES ("service provides no messages") and nothing is stored', async () => {
    const off = await startTestRuntime({ overrides: { messages: { enabled: false } } });
    try {
      const c = off.client.withToken(await off.token('alice', ['user']));
      const uuid = randomUUID();
      for (const res of [await c.get('/v1/messages'), await c.post('/v1/messages', { text: 'x' }), await c.get(`/v1/messages/${uuid}`),
        await c.patch(`/v1/messages/${uuid}`, { text: 'x' }), await c.delete(`/v1/messages/${uuid}`)]) {
        expect([res.status, res.body.code]).toEqual([404, 'NO_MESSAGES']);
      }
      expect((await off.services.db.query('SELECT 1 FROM messages')).rowCount).toBe(0);
    } finally {
      await off.close();
    }
  });
});
