import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID, createHash } from 'node:crypto';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { countRows } from '../../helpers/databases.js';
import { postEntry } from '../../helpers/repo.js';

/** Every row of the spec's Repositories table for the `store` connector, over HTTP against real PostgreSQL and Redis. */
let rt: TestRuntime;
let api: TestClient;
const base = '/v1/services/store/repo';

const mk = (name: string, type?: 'document' | 'collection', parent?: string, metadata: Record<string, unknown> = {}) => postEntry(api, base, name, type, parent, metadata);
const count = () => countRows(rt.services.db, 'entries');

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
});
afterAll(() => rt?.close());

describe('entries', () => {
  it('creates a document in the root and reads it back', async () => {
    const doc = await mk('report.pdf', 'document', undefined, { customer: 'ACME', nested: { day: '2026-11-22' } });
    const res = await api.get(`${base}/${doc.uuid}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ uuid: doc.uuid, name: 'report.pdf', type: 'document', creator: 'alice', owner: null, size: null, metadata: { customer: 'ACME' } });
    expect(res.body.links.self.href).toBe(`${base}/${doc.uuid}`);
  });

  it('creates in a collection, and 405 when the parent is a document', async () => {
    const col = await mk('folder', 'collection');
    const child = await mk('inside.txt', 'document', col.uuid);
    const got = await api.get(`${base}/${child.uuid}`);
    expect(got.body.links.parent.href).toBe(`${base}/${col.uuid}`);
    const doc = await mk('plain.txt');
    const res = await api.post(`${base}/${doc.uuid}`, { name: 'x', type: 'document' });
    expect(res.status).toBe(405);
    expect(res.body.code).toBe('PARENT_NOT_COLLECTION');
  });

  it('409 when the name exists in the collection', async () => {
    await mk('dup.txt');
    const before = await count();
    const res = await api.post(base, { name: 'dup.txt', type: 'document' });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('NAME_EXISTS');
    expect(await count()).toBe(before);
  });

  it('PUT replaces the record, PATCH merges metadata and removes nothing', async () => {
    const doc = await mk('meta.txt', 'document', undefined, { a: 1, nested: { x: 1, y: 2 } });
    const put = await api.put(`${base}/${doc.uuid}`, { name: 'meta2.txt', metadata: { b: 2 } });
    expect(put.status).toBe(200);
    expect(put.body.name).toBe('meta2.txt');
    expect(put.body.metadata).toEqual({ b: 2 });
    const patch = await api.patch(`${base}/${doc.uuid}`, { metadata: { c: 3, nested: { y: 20, z: 30 } } });
    expect(patch.status).toBe(200);
    expect(patch.body.metadata).toEqual({ b: 2, c: 3, nested: { y: 20, z: 30 } });
    const patch2 = await api.patch(`${base}/${doc.uuid}`, { metadata: { nested: { x: 1 } } });
    expect(patch2.body.metadata.nested).toEqual({ y: 20, z: 30, x: 1 });
    // links and embedded from a GET are ignored on write
    const got = await api.get(`${base}/${doc.uuid}`);
    const back = await api.put(`${base}/${doc.uuid}`, got.body);
    expect(back.status).toBe(200);
    expect(back.body.metadata).toEqual(got.body.metadata);
  });

  it('PUT/PATCH: 409 for a name clash, a type change or another uuid; 404 for an unknown entry', async () => {
    await mk('taken.txt');
    const doc = await mk('free.txt');
    expect((await api.put(`${base}/${doc.uuid}`, { name: 'taken.txt', metadata: {} })).status).toBe(409);
    expect((await api.patch(`${base}/${doc.uuid}`, { type: 'collection' })).status).toBe(409);
    expect((await api.patch(`${base}/${doc.uuid}`, { uuid: randomUUID() })).status).toBe(409);
    expect((await api.put(`${base}/${randomUUID()}`, { name: 'n', metadata: {} })).status).toBe(404);
    expect((await api.patch(`${base}/${randomUUID()}`, { name: 'n' })).status).toBe(404);
  });

  it('DELETE removes an entry (204) and then it is 404; a collection goes with its children', async () => {
    const col = await mk('to-delete', 'collection');
    const inner = await mk('inner.txt', 'document', col.uuid);
    expect((await api.delete(`${base}/${col.uuid}`)).status).toBe(204);
    expect((await api.get(`${base}/${col.uuid}`)).status).toBe(404);
    expect((await api.get(`${base}/${inner.uuid}`)).status).toBe(404);
    expect((await api.delete(`${base}/${col.uuid}`)).status).toBe(404);
  });

  it('DELETE of a document used by a processing task: 409 listing the tasks; force deletes anyway', async () => {
    const doc = await mk('in-use.pdf');
    const tid = randomUUID();
    const db = rt.services.db;
    await db.query(`INSERT INTO tasks (tid, sid, name, status, creator) VALUES ($1, 'store', 'print run', 'processing', 'alice')`, [tid]);
    const lid = randomUUID();
    await db.query(`INSERT INTO lists (lid, kind, tid) VALUES ($1, 'input', $2)`, [lid, tid]);
    await db.query(`INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid) VALUES ($1, $2, 0, $3, 'store', $4)`,
      [randomUUID(), lid, `${base}/${doc.uuid}`, doc.uuid]);
    const res = await api.delete(`${base}/${doc.uuid}`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('DOCUMENT_IN_USE');
    expect(res.body.details.tasks).toEqual([{ tid, sid: 'store', href: `/v1/services/store/tasks/${tid}`, status: 'processing' }]);
    expect((await api.get(`${base}/${doc.uuid}`)).status).toBe(200);
    // content changes are refused too while the task runs
    const put = await api.request('PUT', `${base}/${doc.uuid}/content`, { body: 'x', headers: { 'content-type': 'text/plain' } });
    expect(put.status).toBe(409);
    const delContent = await api.delete(`${base}/${doc.uuid}/content`);
    expect(delContent.status).toBe(409);
    expect(delContent.body.details.tasks[0].tid).toBe(tid);
    // a collection holding it cannot be deleted either
    const holder = await mk('holder', 'collection');
    const inner = await mk('inner-in-use.pdf', 'document', holder.uuid);
    await db.query(`INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid) VALUES ($1, $2, 1, 'x', 'store', $3)`, [randomUUID(), lid, inner.uuid]);
    const delHolder = await api.delete(`${base}/${holder.uuid}`);
    expect(delHolder.status).toBe(409);
    expect(delHolder.body.details.tasks).toHaveLength(1);
    // launches of delete and move commands are refused the same way (entry and users in one query)
    const launchDel = await api.post(`${base}/command`, { command: 'delete', parameters: { source: holder.uuid } });
    expect(launchDel.status).toBe(409);
    expect(launchDel.body.details.tasks).toEqual([{ tid, sid: 'store', href: `/v1/services/store/tasks/${tid}`, status: 'processing' }]);
    const dest = await mk('move-dest', 'collection');
    const launchMove = await api.post(`${base}/command`, { command: 'move', parameters: { source: inner.uuid, target: dest.uuid } });
    expect(launchMove.status).toBe(409);
    expect(launchMove.body.code).toBe('DOCUMENT_IN_USE');
    // a delete command's run checks again, on the locked subtree (a task may have started since the launch)
    await expect(rt.services.repository.removeEntry('store', holder.uuid, { unlessInUse: true })).rejects.toMatchObject({ code: 'DOCUMENT_IN_USE' });
    expect((await api.get(`${base}/${inner.uuid}`)).status).toBe(200);
    // inactives leaves it out
    const other = await mk('idle.pdf');
    const inactive = await api.post('/v1/repo/inactives', [doc.uuid, other.uuid]);
    expect(inactive.status).toBe(200);
    expect(inactive.body).toEqual([other.uuid]);
    // a task that is not processing does not block
    await db.query(`UPDATE tasks SET status = 'completed' WHERE tid = $1`, [tid]);
    expect((await api.post('/v1/repo/inactives', { documents: [doc.uuid] })).body).toEqual([doc.uuid]);
    await db.query(`UPDATE tasks SET status = 'processing' WHERE tid = $1`, [tid]);
    expect((await api.delete(`${base}/${doc.uuid}?force=true`)).status).toBe(204);
    expect((await api.get(`${base}/${doc.uuid}`)).status).toBe(404);
  });

  it('the root collection cannot be deleted (403) or changed (409)', async () => {
    const root = (await api.get(`${base}?scope=root&limit=1`)).body.uuid as string;
    const del = await api.delete(`${base}/${root}`);
    expect(del.status).toBe(403);
    expect(del.body.code).toBe('ROOT_PROTECTED');
    expect((await api.patch(`${base}/${root}`, { name: 'renamed' })).status).toBe(409);
    expect((await api.get(`${base}/${root}`)).status).toBe(200);
  });

  it('POST /repo/inactives: 400 for anything but a list of ids', async () => {
    for (const body of [{ documents: 'x' }, ['not-a-uuid'], 42, { documents: [randomUUID()], extra: 1 }]) {
      const res = await api.post('/v1/repo/inactives', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe('listing', () => {
  let col: string;
  beforeAll(async () => {
    col = (await mk('listing', 'collection')).uuid;
    for (let i = 0; i < 12; i++) {
      await mk(`doc-${String(i).padStart(2, '0')}.txt`, 'document', col, { index: i, group: i % 2 === 0 ? 'even' : 'odd', deep: { tag: `T${i % 3}` } });
    }
    await mk('sub', 'collection', col);
  });

  it('children with paging and sort', async () => {
    const page1 = await api.get(`${base}/${col}/children?limit=5`);
    expect(page1.status).toBe(200);
    expect(page1.body.map((e: { name: string }) => e.name)).toEqual(['doc-00.txt', 'doc-01.txt', 'doc-02.txt', 'doc-03.txt', 'doc-04.txt']);
    const page3 = await api.get(`${base}/${col}/children?limit=5&offset=10`);
    expect(page3.body.map((e: { name: string }) => e.name)).toEqual(['doc-10.txt', 'doc-11.txt', 'sub']);
    const desc = await api.get(`${base}/${col}/children?sort=-name&limit=2`);
    expect(desc.body.map((e: { name: string }) => e.name)).toEqual(['sub', 'doc-11.txt']);
    const byMeta = await api.get(`${base}/${col}/children?sort=-type,-metadata.index&limit=3`);
    expect(byMeta.body.map((e: { name: string }) => e.name)).toEqual(['doc-11.txt', 'doc-10.txt', 'doc-09.txt']);
  });

  it('children filters: exact values, metadata paths, regular expressions', async () => {
    const even = await api.get(`${base}/${col}/children?group=even`);
    expect(even.body).toHaveLength(6);
    const tag = await api.get(`${base}/${col}/children?metadata.deep.tag=T1`);
    expect(tag.body.map((e: { name: string }) => e.name)).toEqual(['doc-01.txt', 'doc-04.txt', 'doc-07.txt', 'doc-10.txt']);
    const rx = await api.get(`${base}/${col}/children?name=${encodeURIComponent('/^DOC-1[01]/i')}`);
    expect(rx.body.map((e: { name: string }) => e.name)).toEqual(['doc-10.txt', 'doc-11.txt']);
    const type = await api.get(`${base}/${col}/children?type=collection`);
    expect(type.body.map((e: { name: string }) => e.name)).toEqual(['sub']);
  });

  it('children: 404 past the end, for a document, for an empty collection, for an unknown entry', async () => {
    expect((await api.get(`${base}/${col}/children?offset=100`)).status).toBe(404);
    const doc = await mk('lonely.txt');
    expect((await api.get(`${base}/${doc.uuid}/children`)).status).toBe(404);
    const empty = await mk('empty', 'collection');
    expect((await api.get(`${base}/${empty.uuid}/children`)).body.code).toBe('NO_CHILDREN');
    expect((await api.get(`${base}/${randomUUID()}/children`)).status).toBe(404);
  });

  it('children: limit at most 500, bad sort and filter paths are 400', async () => {
    expect((await api.get(`${base}/${col}/children?limit=500`)).status).toBe(200);
    for (const q of ['limit=501', 'limit=0', 'limit=abc', 'offset=-1', 'sort=na%20me', 'sort=a;drop', 'x%27%3B=1', `name=${encodeURIComponent('/(unclosed/')}`, 'embed=bogus']) {
      const res = await api.get(`${base}/${col}/children?${q}`);
      expect(res.status, q).toBe(400);
    }
  });

  it('embed permissions, icon and thumb', async () => {
    const res = await api.get(`${base}/${col}/children?limit=1&embed=permissions,icon,thumb`);
    expect(res.body[0].embedded.permissions).toEqual({ read: true, write: true, delete: true });
    expect(res.body[0].embedded['content-type'].icon).toEqual({ font: 'material-icons', value: 'description' });
    const sub = await api.get(`${base}/${col}/children?type=collection&embed=icon`);
    expect(sub.body[0].embedded['content-type'].icon.value).toBe('folder');
  });

  it('GET repo returns the root collection with scope root or all', async () => {
    const all = await api.get(`${base}?limit=500`);
    expect(all.status).toBe(200);
    expect(all.body.type).toBe('collection');
    const allNames = all.body.embedded.entries.map((e: { name: string }) => e.name);
    expect(allNames).toContain('doc-05.txt');
    const root = await api.get(`${base}?scope=root&limit=500`);
    const rootNames = root.body.embedded.entries.map((e: { name: string }) => e.name);
    expect(rootNames).toContain('listing');
    expect(rootNames).not.toContain('doc-05.txt');
    const paged = await api.get(`${base}?scope=all&limit=2&sort=-name&embed=permissions`);
    expect(paged.body.embedded.entries).toHaveLength(2);
    expect(paged.body.embedded.permissions).toEqual({ read: true, write: true, delete: true });
    expect((await api.get(`${base}?scope=everything`)).status).toBe(400);
    expect((await api.get(`${base}?embed=icon`)).status).toBe(400);
    expect((await api.get(`${base}?limit=501`)).status).toBe(400);
  });
});

describe('content', () => {
  it('uploads, downloads with Content-Type, Content-Length and ETag, ranges, 304', async () => {
    const doc = await mk('hello.txt');
    const data = Buffer.from('hello, repository\n'.repeat(1000));
    const sha = createHash('sha256').update(data).digest('hex');
    const put = await api.request('PUT', `${base}/${doc.uuid}/content`, { body: data, headers: { 'content-type': 'text/plain; charset=utf-8' } });
    expect(put.status).toBe(204);
    expect(put.headers.get('etag')).toBe(`"${sha}"`);
    const meta = await api.get(`${base}/${doc.uuid}`);
    expect(meta.body).toMatchObject({ size: data.length, mimeType: 'text/plain', sha256: sha });
    const get = await api.get(`${base}/${doc.uuid}/content`);
    expect(get.status).toBe(200);
    expect(get.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(get.headers.get('content-length')).toBe(String(data.length));
    expect(get.headers.get('etag')).toBe(`"${sha}"`);
    expect(Buffer.compare(get.raw, data)).toBe(0);
    const range = await api.get(`${base}/${doc.uuid}/content`, { headers: { range: 'bytes=7-16' } });
    expect(range.status).toBe(206);
    expect(range.raw.toString()).toBe('repository');
    expect(range.headers.get('content-range')).toBe(`bytes 7-16/${data.length}`);
    expect((await api.get(`${base}/${doc.uuid}/content`, { headers: { range: `bytes=${data.length + 5}-` } })).status).toBe(416);
    const cached = await api.get(`${base}/${doc.uuid}/content`, { headers: { 'if-none-match': `"${sha}"` } });
    expect(cached.status).toBe(304);
    // replace
    const put2 = await api.request('PUT', `${base}/${doc.uuid}/content`, { body: 'v2', headers: { 'content-type': 'text/plain' } });
    expect(put2.status).toBe(204);
    expect((await api.get(`${base}/${doc.uuid}/content`)).raw.toString()).toBe('v2');
  });

  it('content of a collection: GET 404, PUT 406, DELETE 405; of a document without content: GET 404', async () => {
    const col = await mk('no-content', 'collection');
    expect((await api.get(`${base}/${col.uuid}/content`)).status).toBe(404);
    expect((await api.request('PUT', `${base}/${col.uuid}/content`, { body: 'x' })).status).toBe(406);
    expect((await api.delete(`${base}/${col.uuid}/content`)).status).toBe(405);
    const doc = await mk('empty.bin');
    const res = await api.get(`${base}/${doc.uuid}/content`);
    expect(res.status).toBe(404);
    expect(res.body.code).toBe('NO_CONTENT');
    expect((await api.get(`${base}/${randomUUID()}/content`)).status).toBe(404);
  });

  it('DELETE content keeps the record', async () => {
    const doc = await mk('drop-content.txt');
    await api.request('PUT', `${base}/${doc.uuid}/content`, { body: 'bytes', headers: { 'content-type': 'text/plain' } });
    expect((await api.delete(`${base}/${doc.uuid}/content`)).status).toBe(204);
    const meta = await api.get(`${base}/${doc.uuid}`);
    expect(meta.status).toBe(200);
    expect(meta.body).toMatchObject({ size: null, sha256: null, mimeType: null });
    expect((await api.get(`${base}/${doc.uuid}/content`)).status).toBe(404);
  });

  it('preview: 404 for a collection, without content, and until the worker made it', async () => {
    const col = await mk('pv-col', 'collection');
    expect((await api.get(`${base}/${col.uuid}/preview`)).status).toBe(404);
    const doc = await mk('pv.bin');
    expect((await api.get(`${base}/${doc.uuid}/preview`)).body.code).toBe('NO_CONTENT');
    await api.request('PUT', `${base}/${doc.uuid}/content`, { body: 'not an image', headers: { 'content-type': 'application/octet-stream' } });
    const res = await api.get(`${base}/${doc.uuid}/preview`);
    expect(res.status).toBe(404);
    expect(['PREVIEW_NOT_READY', 'PREVIEW_UNAVAILABLE']).toContain(res.body.code);
  });
});

describe('services without a repository', () => {
  it('404 for every repository route of a service without one, and of an unknown service', async () => {
    for (const sid of ['mock', 'nope']) {
      expect((await api.get(`/v1/services/${sid}/repo`)).status).toBe(404);
      expect((await api.post(`/v1/services/${sid}/repo`, { name: 'a', type: 'document' })).status).toBe(404);
      expect((await api.get(`/v1/services/${sid}/repo/${randomUUID()}`)).status).toBe(404);
      expect((await api.post(`/v1/services/${sid}/repo/command`, { command: 'delete', parameters: { source: randomUUID() } })).status).toBe(404);
    }
  });
});
