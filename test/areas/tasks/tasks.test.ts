import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../../helpers/databases.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';

/**
 * The Tasks table of the spec (except the action route) over HTTP, against
 * real PostgreSQL and Redis: create, read with embeds, replace, patch,
 * delete, searches with filters, paging, inlineCount and inputDocument, and
 * the rights of users, operators and admins.
 */

let rt: TestRuntime;
let admin: TestClient;
let ann: TestClient;
let bob: TestClient;
let operator: TestClient;
const base = '/v1/services/work/tasks';

const setStatus = (tid: string, status: string) => rt.services.db.query('UPDATE tasks SET status = $2 WHERE tid = $1', [tid, status]);

async function mkTask(client: TestClient, body: Record<string, unknown>, headers?: Record<string, string>) {
  const res = await client.post(base, body, { headers });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 10 } } }, other: { type: 'mock', options: { tasks: { itemMs: 10 } } } } },
  });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  ann = rt.client.withToken(await rt.token('ann', ['user'], { email: 'ann@example.com' }));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  operator = rt.client.withToken(await rt.token('olga', ['operator']));
});
afterAll(() => rt.close());

describe('create and read', () => {
  it('polls of many tasks at once (their reads share statements) each get their own task, 404 for another user\'s or a missing one, and see a change made just before', async () => {
    const anns = await Promise.all(Array.from({ length: 40 }, (_, i) => mkTask(ann, { name: `poll ${i}` })));
    const bobs = await Promise.all(Array.from({ length: 10 }, (_, i) => mkTask(bob, { name: `bob poll ${i}` })));
    const missing = '00000000-0000-4000-8000-000000000000';
    const asks = [...anns, ...anns, ...bobs].map((t) => ({ tid: t.tid as string, mine: anns.includes(t), name: t.name as string }));
    asks.push({ tid: missing, mine: false, name: '' }, { tid: missing.toUpperCase(), mine: false, name: '' });
    const answers = await Promise.all(asks.map((a) => ann.get(`${base}/${a.tid}`)));
    answers.forEach((res, i) => {
      const a = asks[i]!;
      if (a.mine) expect(res.body, a.name).toMatchObject({ tid: a.tid, name: a.name });
      else expect(res.status, a.tid).toBe(404);
    });
    // a change answered before the polls is seen by every one of them
    await ann.patch(`${base}/${anns[0].tid}`, { name: 'renamed before the polls' });
    const after = await Promise.all(Array.from({ length: 30 }, () => ann.get(`${base}/${anns[0].tid}`)));
    for (const res of after) expect(res.body.name).toBe('renamed before the polls');
  });

  it('creates a task with metadata and an input list, and reads it back with every embed', async () => {
    const doc = await admin.post('/v1/services/store/repo', { name: 'a.pdf' });
    const task = await mkTask(ann, {
      name: 'print run', type: 'print', metadata: { customer: { name: 'ACME' }, day: '2026-11-22' },
      lists: { input: { metadata: { tray: '2' }, embedded: { listItems: [
        { href: `/v1/services/store/repo/${doc.body.uuid}`, metadata: { copies: 2 } },
        { href: 'https://example.com/b.pdf' },
      ] } } },
    });
    expect(task).toMatchObject({
      sid: 'work', name: 'print run', type: 'print', status: 'idle', creator: 'ann', owner: null,
      metadata: { customer: { name: 'ACME' }, day: '2026-11-22' }, cstats: {}, href: `${base}/${task.tid}`,
    });
    const plain = await ann.get(`${base}/${task.tid}`);
    expect(plain.status).toBe(200);
    expect(plain.body.embedded).toBeUndefined();
    expect(plain.body.metadata).toEqual(task.metadata);
    const full = await ann.get(`${base}/${task.tid}?embed=metadata,input,inputlist,output,cstats`);
    expect(full.status).toBe(200);
    expect(full.body.embedded.input).toMatchObject({ metadata: { tray: '2' }, count: 2 });
    const items = full.body.embedded.inputlist.embedded.listItems;
    expect(items.map((i: { index: number }) => i.index)).toEqual([0, 1]);
    expect(items[0]).toMatchObject({ href: `/v1/services/store/repo/${doc.body.uuid}`, metadata: { copies: 2 } });
    // one task: `input` is the spec's only input embed, so it carries the items too (as `output` does)
    expect(full.body.embedded.input.embedded.listItems).toEqual(items);
    const inputOnly = await ann.get(`${base}/${task.tid}?embed=input`);
    expect(inputOnly.status).toBe(200);
    expect(Object.keys(inputOnly.body.embedded)).toEqual(['input']);
    expect(inputOnly.body.embedded.input).toMatchObject({ metadata: { tray: '2' }, count: 2 });
    expect(inputOnly.body.embedded.input.embedded.listItems).toEqual(items);
    expect(inputOnly.body.embedded.input.truncated).toBeUndefined();
    // the searches keep `input` for the list's metadata and `inputlist` for its items
    const searched = await ann.get(`${base}?embed=input,inputlist&name=print%20run`);
    expect(searched.status).toBe(200);
    const found = searched.body.find((t: { tid: string }) => t.tid === task.tid);
    expect(found.embedded.input.embedded).toBeUndefined();
    expect(found.embedded.inputlist.embedded.listItems).toEqual(items);
    expect(full.body.embedded.output).toMatchObject({ count: 0, embedded: { listItems: [] } });
    // force: a processing task with no open item gets its status derived now (none failed: completed)
    await setStatus(task.tid, 'processing');
    expect((await ann.get(`${base}/${task.tid}`)).body.status).toBe('processing');
    const forced = await ann.get(`${base}/${task.tid}?force=true`);
    expect(forced.status).toBe(200);
    expect(forced.body.status).toBe('completed');
    expect((await ann.get(`${base}/${task.tid}`)).body.status).toBe('completed');
    expect((await ann.get(`${base}/${task.tid}?force=maybe`)).body.code).toBe('INVALID_QUERY');
  });

  it('refuses bad bodies with 400 and creates nothing', async () => {
    const before = [await countRows(rt.services.db, 'tasks'), await countRows(rt.services.db, 'lists'), await countRows(rt.services.db, 'list_items')];
    const missing = await ann.post(base, { metadata: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('VALIDATION_FAILED');
    expect(JSON.stringify(missing.body.details.issues)).toContain('body.name');
    const unknown = await ann.post(base, { name: 'x', colour: 'red' });
    expect(unknown.status).toBe(400);
    const badHref = await ann.post(base, { name: 'x', lists: { input: { embedded: { listItems: [{ href: '/v1/services/store/repo/x' }, { href: 'ftp://h/x' }] } } } });
    expect(badHref.status).toBe(400);
    expect(badHref.body).toMatchObject({ code: 'INVALID_HREF', details: { index: 0, field: 'href' } });
    const notJson = await ann.request('POST', base, { body: 'x', headers: { 'content-type': 'application/pdf' } });
    expect(notJson.status).toBe(415);
    expect([await countRows(rt.services.db, 'tasks'), await countRows(rt.services.db, 'lists'), await countRows(rt.services.db, 'list_items')]).toEqual(before);
  });

  it('answers 404 for an unknown service, a service without tasks and an unknown task', async () => {
    expect((await ann.post('/v1/services/nope/tasks', { name: 'x' })).body.code).toBe('SERVICE_NOT_FOUND');
    expect((await ann.post('/v1/services/mock/tasks', { name: 'x' })).body.code).toBe('NO_TASKS');
    expect((await ann.get('/v1/services/store/tasks')).body.code).toBe('NO_TASKS');
    const missing = await ann.get(`${base}/6f1c7c2e-0000-4000-8000-000000000000`);
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('TASK_NOT_FOUND');
    expect((await ann.get(`${base}/not-a-uuid`)).body.code).toBe('INVALID_UUID');
    const task = await mkTask(ann, { name: 'elsewhere' });
    expect((await ann.get(`/v1/services/other/tasks/${task.tid}`)).body.code).toBe('TASK_NOT_FOUND');
    expect((await ann.get(`${base}/${task.tid}?embed=everything`)).body.code).toBe('INVALID_EMBED');
  });

  it('records x-owner: oneself, or anyone with impersonate; 403 otherwise', async () => {
    const own = await mkTask(ann, { name: 'mine' }, { 'x-owner': 'ann@example.com' });
    expect(own).toMatchObject({ creator: 'ann', owner: 'ann@example.com' });
    const before = await countRows(rt.services.db, 'tasks');
    const denied = await ann.post(base, { name: 'for bob' }, { headers: { 'x-owner': 'bob' } });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('IMPERSONATION_DENIED');
    expect(await countRows(rt.services.db, 'tasks')).toBe(before);
    const forBob = await mkTask(admin, { name: 'for bob' }, { 'x-owner': 'bob' });
    expect(forBob).toMatchObject({ creator: 'root', owner: 'bob' });
    expect((await bob.get(`${base}/${forBob.tid}`)).status).toBe(200);
  });
});

describe('replace, patch, delete', () => {
  it('PUT replaces the metadata, PATCH merges it; the lists stay', async () => {
    const task = await mkTask(ann, { name: 't', metadata: { a: { b: '1', c: '2' }, d: 'x' }, lists: { input: { embedded: { listItems: [{ href: 'https://example.com/1' }] } } } });
    const patched = await ann.patch(`${base}/${task.tid}`, { metadata: { a: { b: 'B', e: '3' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.metadata).toEqual({ a: { b: 'B', c: '2', e: '3' }, d: 'x' });
    const replaced = await ann.put(`${base}/${task.tid}`, { ...patched.body, metadata: { only: 'this' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.metadata).toEqual({ only: 'this' });
    expect(replaced.body.name).toBe('t');
    const renamed = await ann.patch(`${base}/${task.tid}`, { name: 'renamed' });
    expect(renamed.body).toMatchObject({ name: 'renamed', metadata: { only: 'this' } });
    expect((await ann.get(`${base}/${task.tid}/input`)).body.count).toBe(1);
    const otherTid = await ann.put(`${base}/${task.tid}`, { tid: '6f1c7c2e-0000-4000-8000-000000000000', metadata: {} });
    expect(otherTid.status).toBe(409);
    expect((await ann.put(`${base}/${task.tid}`, { metadata: 'no' })).status).toBe(400);
  });

  it('refuses changes and deletion while processing (409 TASK_ACTIVE), deletes otherwise with its lists', async () => {
    const task = await mkTask(ann, { name: 'busy', lists: { input: { embedded: { listItems: [{ href: 'https://example.com/1' }] } } } });
    await setStatus(task.tid, 'processing');
    for (const res of [
      await ann.delete(`${base}/${task.tid}`),
      await ann.patch(`${base}/${task.tid}`, { metadata: { a: '1' } }),
      await ann.put(`${base}/${task.tid}`, { metadata: {} }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ code: 'TASK_ACTIVE', details: { tid: task.tid, status: 'processing' } });
    }
    expect((await ann.get(`${base}/${task.tid}`)).body.metadata).toEqual({});
    await setStatus(task.tid, 'completed');
    const lists = await countRows(rt.services.db, 'lists');
    expect((await ann.delete(`${base}/${task.tid}`)).status).toBe(204);
    expect(await countRows(rt.services.db, 'lists')).toBe(lists - 2);
    expect((await ann.get(`${base}/${task.tid}`)).status).toBe(404);
    expect((await ann.delete(`${base}/${task.tid}`)).status).toBe(404);
  });
});

describe('rights', () => {
  it("shows nothing of another user's task: 404 on every row (as if absent), absent from searches", async () => {
    const task = await mkTask(ann, { name: 'secret', metadata: { pin: '1234' }, lists: { input: { embedded: { listItems: [{ href: 'https://example.com/s' }] } } } });
    const itemId = (await ann.get(`${base}/${task.tid}/input?embed=items`)).body.embedded.listItems[0].id;
    for (const res of [
      await bob.get(`${base}/${task.tid}`),
      await bob.put(`${base}/${task.tid}`, { metadata: {} }),
      await bob.patch(`${base}/${task.tid}`, { metadata: {} }),
      await bob.delete(`${base}/${task.tid}`),
      await bob.get(`${base}/${task.tid}/input`),
      await bob.get(`${base}/${task.tid}/input/${itemId}`),
      await bob.post(`${base}/${task.tid}/input?href=https://example.com/x`),
      await bob.delete(`${base}/${task.tid}/input/${itemId}`),
      await bob.get(`${base}/${task.tid}/output`),
      await bob.get(`/v1/tasks/${task.tid}/input/${itemId}/content`),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('TASK_NOT_FOUND');
      expect(JSON.stringify(res.body)).not.toContain('1234');
      expect(JSON.stringify(res.body)).not.toContain('secret');
    }
    const search = await bob.get(`${base}?name=secret`);
    expect(search.status).toBe(200);
    expect(search.body).toEqual([]);
    expect((await bob.get('/v1/tasks?name=secret')).status).toBe(404);
    expect((await bob.get('/v1/tasks?name=secret&inlineCount=true')).body).toEqual({ count: 0 });
    // the operator sees all tasks; the task is unchanged
    const seen = await operator.get(`/v1/tasks?name=secret`);
    expect(seen.status).toBe(200);
    expect(seen.body.map((t: { tid: string }) => t.tid)).toContain(task.tid);
    expect((await operator.get(`${base}/${task.tid}`)).body.metadata).toEqual({ pin: '1234' });
    expect((await ann.get(`${base}/${task.tid}/input`)).body.count).toBe(1);
  });

  it('a role without the tasks area is refused', async () => {
    const nobody = rt.client.withToken(await rt.token('zed', ['readonly']));
    expect((await nobody.post(base, { name: 'x' })).status).toBe(403);
    expect((await nobody.get(base)).status).toBe(200);
    const own = await mkTask(admin, { name: 'readable' }, { 'x-owner': 'zed' });
    expect((await nobody.get(`${base}/${own.tid}`)).status).toBe(200);
    const refused = await nobody.patch(`${base}/${own.tid}`, { metadata: { a: '1' } });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('FORBIDDEN');
    const guest = rt.client.withToken(await rt.token('gus', ['no-such-role']));
    expect((await guest.get(`${base}/${own.tid}`)).status).toBe(403);
  });
});

describe('search', () => {
  let tids: string[];
  let docUuid: string;
  const owner = 'searcher';
  let me: TestClient;

  beforeAll(async () => {
    me = rt.client.withToken(await rt.token(owner, ['user']));
    docUuid = (await admin.post('/v1/services/store/repo', { name: 'searched.pdf' })).body.uuid;
    tids = [];
    for (let i = 0; i < 5; i++) {
      const items = i === 3 ? [{ href: `/v1/services/store/repo/${docUuid}` }] : [];
      const t = await mkTask(me, {
        name: `job-${i}`, type: i % 2 === 0 ? 'even' : 'odd',
        metadata: { creationDay: `2026-11-2${i}`, customer: { name: i < 2 ? 'ACME' : 'Globex' }, n: i },
        lists: { input: { embedded: { listItems: items } } },
      }, i === 4 ? undefined : undefined);
      tids.push(t.tid);
    }
    await mkTask(me, { name: 'job-x' }).then((t) => rt.services.db.query('UPDATE tasks SET sid = $2 WHERE tid = $1', [t.tid, 'other']).then(() => tids.push(t.tid)));
  });

  const names = (body: { name: string }[]) => body.map((t) => t.name);

  it('lists the service\'s tasks oldest first, with paging and sort', async () => {
    expect(names((await me.get(base)).body)).toEqual(['job-0', 'job-1', 'job-2', 'job-3', 'job-4']);
    expect(names((await me.get(`${base}?offset=1&limit=2`)).body)).toEqual(['job-1', 'job-2']);
    expect(names((await me.get(`${base}?sort=-name`)).body)).toEqual(['job-4', 'job-3', 'job-2', 'job-1', 'job-0']);
    expect(names((await me.get(`${base}?sort=type,-metadata.n`)).body)).toEqual(['job-4', 'job-2', 'job-0', 'job-3', 'job-1']);
    const listed = (await me.get(base)).body[0];
    expect(listed.metadata).toBeUndefined();
    expect(listed.cstats).toBeUndefined();
    const embedded = (await me.get(`${base}?embed=metadata,cstats,input`)).body[0];
    expect(embedded).toMatchObject({ metadata: { n: 0 }, cstats: {}, embedded: { input: { count: 0 } } });
  });

  it('filters on fields and nested metadata, exactly or by /regex/flags', async () => {
    expect(names((await me.get(`${base}?metadata.customer.name=ACME`)).body)).toEqual(['job-0', 'job-1']);
    expect(names((await me.get(`${base}?customer.name=Globex&type=even`)).body)).toEqual(['job-2', 'job-4']);
    expect(names((await me.get(`${base}?metadata.creationDay=${encodeURIComponent('/2[34]$/')}`)).body)).toEqual(['job-3', 'job-4']);
    expect(names((await me.get(`${base}?name=${encodeURIComponent('/JOB-[01]/i')}`)).body)).toEqual(['job-0', 'job-1']);
    expect(names((await me.get(`${base}?status=idle&name=job-2`)).body)).toEqual(['job-2']);
    expect((await me.get(`${base}?name=nothing`)).body).toEqual([]);
  });

  it('counts with inlineCount and searches across services', async () => {
    expect((await me.get(`${base}?inlineCount=true`)).body).toEqual({ count: 5 });
    expect((await me.get(`${base}?inlineCount=1&customer.name=ACME&limit=1`)).body).toEqual({ count: 2 });
    expect((await me.get('/v1/tasks?inlineCount=true')).body).toEqual({ count: 6 });
    expect(names((await me.get('/v1/tasks?sid=other')).body)).toEqual(['job-x']);
    expect((await me.get('/v1/tasks?name=none')).body.code).toBe('NO_MATCHING_TASKS');
    expect((await me.get('/v1/tasks?name=none')).status).toBe(404);
  });

  it('finds the tasks whose input list names a document (inputDocument)', async () => {
    expect(names((await me.get(`${base}?inputDocument=${docUuid}`)).body)).toEqual(['job-3']);
    expect(names((await me.get(`/v1/tasks?inputDocument=${docUuid.toUpperCase()}`)).body)).toEqual(['job-3']);
    expect((await me.get(`/v1/tasks?inputDocument=${docUuid}&inlineCount=true`)).body).toEqual({ count: 1 });
    expect((await me.get('/v1/tasks?inputDocument=6f1c7c2e-0000-4000-8000-000000000000')).status).toBe(404);
    expect((await me.get('/v1/tasks?inputDocument=nope')).body.code).toBe('INVALID_UUID');
  });

  it('refuses bad queries with 400', async () => {
    for (const [q, code] of [
      ['limit=501', 'INVALID_QUERY'], ['limit=0', 'INVALID_QUERY'], ['offset=-1', 'INVALID_QUERY'],
      [`name=${encodeURIComponent('/(unclosed/')}`, 'INVALID_FILTER'], [`name=${encodeURIComponent('/a{99999}/')}`, 'INVALID_FILTER'],
      ['embed=items', 'INVALID_EMBED'], ['inlineCount=perhaps', 'INVALID_QUERY'], ['sort=bad..path', 'INVALID_PROPERTY'],
    ] as const) {
      for (const path of [base, '/v1/tasks']) {
        const res = await me.get(`${path}?${q}`);
        expect(res.status, `${path}?${q}`).toBe(400);
        expect(res.body.code, `${path}?${q}`).toBe(code);
      }
    }
    expect((await me.get(`${base}?limit=500`)).status).toBe(200);
  });
});
