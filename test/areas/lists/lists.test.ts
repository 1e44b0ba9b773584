import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csvThread } from '../../../src/areas/lists/store/bulk/csv-thread.js';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { serveFiles, type HttpSource } from '../../helpers/http-source.js';

/** Every row and status of the spec's Lists table, over HTTP against real PostgreSQL and Redis. */

let rt: TestRuntime;
let alice: TestClient;
let bob: TestClient;
let reader: TestClient;
let admin: TestClient;
let source: HttpSource;
let sourceUrl: string;

const CSV = 'list.name,list.metadata.dept,item.href,item.metadata.name,item.metadata.copies\r\nMonday,ops,/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000001,Cover,2\r\n,,https://d.example/doc/b,"Body, part 2",\r\n';
const RLI = '; a comment\r\n[LIST]\r\nNAME="Reprints"\r\n[PROGRAM]\r\nNAME="Reprint"\r\n\r\n[DOCUMENT_1]\r\nHREF="https://d.example/doc/a"\r\nNAME="A"\r\n[DOCUMENT_2]\r\nFILE=https://d.example/share/b.pdf\r\ncopies="3"\r\n';
const JSON_LIST = { name: 'J', metadata: { a: { b: 1 }, c: [1, 'x'] }, embedded: { listItems: [{ href: 'https://d.example/doc/1', metadata: { k: 'v' } }, { href: 'https://d.example/doc/2' }] } };

const post = (c: TestClient, body: string, type: string, path = '/v1/lists') => c.request('POST', path, { body, headers: { 'content-type': type } });
const create = async (c: TestClient, json: unknown = JSON_LIST) => {
  const res = await c.post('/v1/lists', json);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { lid: string; count: number };
};
const count = async () => {
  const { rows } = await rt.services.db.query<{ lists: number; items: number }>('SELECT (SELECT count(*)::int FROM lists) AS lists, (SELECT count(*)::int FROM list_items) AS items');
  return rows[0]!;
};

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { lists: { maxItems: 50 } } });
  alice = rt.client.withToken(await rt.token('alice', ['user']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  reader = rt.client.withToken(await rt.token('rita', ['readonly']));
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  source = await serveFiles({
    '/list.csv': { type: 'application/octet-stream', body: CSV },
    '/list': { type: 'application/rli', body: RLI },
    '/bad.csv': { type: 'text/csv', body: 'item.href,item.metadata.x\r\nhttps://d.example/a,"open\r\n' },
    '/image': { type: 'image/png', body: 'x' },
  });
  sourceUrl = source.url;
});
afterAll(async () => {
  await source.close();
  await rt.close();
});

describe('GET /lists', () => {
  it('404 NO_LISTS when the caller has none, then only the own lists', async () => {
    const none = await rt.client.withToken(await rt.token('nobody', ['user'])).get('/v1/lists');
    expect([none.status, none.body.code]).toEqual([404, 'NO_LISTS']);
    const mine = await create(alice);
    await create(bob);
    const res = await alice.get('/v1/lists?limit=500');
    expect(res.status).toBe(200);
    expect(res.body.every((l: { creator: string }) => l.creator === 'alice')).toBe(true);
    expect(res.body.map((l: { lid: string }) => l.lid)).toContain(mine.lid);
    expect(res.body[0]).toMatchObject({ name: 'J', count: 2, links: { self: { href: `/v1/lists/${res.body[0].lid}` } } });
    expect(res.body[0].embedded).toBeUndefined();
  });

  it('embeds items, permissions and the metadata with exactly the three types', async () => {
    const res = await alice.get('/v1/lists?embed=items,permissions,metadata&limit=1');
    expect(res.status).toBe(200);
    const { embedded } = res.body[0];
    expect(embedded.permissions).toEqual({ read: true, write: true, delete: true });
    expect(embedded.listItems.map((i: { index: number }) => i.index)).toEqual([0, 1]);
    const types = [
      { name: 'json', mimeType: 'application/json' },
      { name: 'csv', mimeType: 'text/csv' },
      { name: 'rlist', mimeType: 'application/rli' },
    ];
    for (const key of ['exportTypes', 'importTypes']) {
      expect(embedded.metadata[key]).toHaveLength(3);
      expect(embedded.metadata[key]).toMatchObject(types);
      for (const t of embedded.metadata[key]) expect(Object.keys(t).sort()).toEqual(['description', 'mimeType', 'name']);
    }
  });

  it('pages, sorts and filters; limit above 500, a bad embed or sort is 400', async () => {
    await create(alice, { name: 'zz', metadata: { colour: 'red' } });
    const sorted = await alice.get('/v1/lists?sort=-name&limit=1');
    expect(sorted.body[0].name).toBe('zz');
    const filtered = await alice.get('/v1/lists?colour=/^r/');
    expect(filtered.body.map((l: { name: string }) => l.name)).toEqual(['zz']);
    expect((await alice.get('/v1/lists?colour=blue')).status).toBe(404);
    for (const q of ['limit=501', 'embed=thumb', 'sort=a..b', 'offset=-1']) expect((await alice.get(`/v1/lists?${q}`)).status).toBe(400);
  });

  it('403 without the lists right', async () => {
    const none = rt.client.withToken(await rt.token('eve', ['nosuchrole']));
    expect((await none.get('/v1/lists')).status).toBe(403);
  });
});

describe('POST /lists', () => {
  it('imports JSON (the default), CSV and RList', async () => {
    const j = await create(alice);
    expect(j).toMatchObject({ name: 'J', metadata: { a: { b: 1 }, c: [1, 'x'] }, count: 2, creator: 'alice' });
    const c = await post(alice, CSV, 'text/csv; charset=utf-8');
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ name: 'Monday', metadata: { dept: 'ops' }, count: 2 });
    const items = await alice.get(`/v1/lists/${c.body.lid}/items?embed=items`);
    expect(items.body.map((i: { href: string; metadata: unknown }) => [i.href, i.metadata])).toEqual([
      ['/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000001', { name: 'Cover', copies: '2' }],
      ['https://d.example/doc/b', { name: 'Body, part 2' }],
    ]);
    const r = await post(alice, RLI, 'application/rli');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ name: 'Reprints', metadata: { PROGRAM: { NAME: 'Reprint' } }, count: 2 });
    const untyped = await alice.request('POST', '/v1/lists', { body: JSON.stringify(JSON_LIST) });
    expect(untyped.status).toBe(415);
  });

  it('imports from ?href= (type from the response, else the extension)', async () => {
    const byExt = await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/list.csv`)}`);
    expect([byExt.status, byExt.body.name, byExt.body.count]).toEqual([200, 'Monday', 2]);
    const byType = await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/list`)}`);
    expect([byType.status, byType.body.name]).toEqual([200, 'Reprints']);
    const before = await count();
    const bad = await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/bad.csv`)}`);
    expect([bad.status, bad.body.code, bad.body.details]).toMatchObject([400, 'INVALID_CSV', { row: 2, column: 'item.metadata.x' }]);
    expect((await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/image`)}`)).status).toBe(415);
    expect((await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/missing`)}`)).status).toBe(502);
    expect((await alice.post('/v1/lists?href=file:///etc/passwd')).status).toBe(400);
    expect(await count()).toEqual(before);
  });

  it('both ?href= and a body: 400 HREF_AND_BODY, nothing created', async () => {
    const before = await count();
    const res = await alice.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/list.csv`)}`, JSON_LIST);
    expect([res.status, res.body.code]).toEqual([400, 'HREF_AND_BODY']);
    expect(await count()).toEqual(before);
  });

  it('bad input is a 400 naming row/section and column/key, and nothing is created', async () => {
    const before = await count();
    const missing = await post(alice, 'item.metadata.name\r\nA\r\n', 'text/csv');
    expect([missing.status, missing.body.code, missing.body.details]).toEqual([400, 'INVALID_CSV', { row: 1, column: 'item.href' }]);
    const quote = await post(alice, `item.href,item.metadata.name\r\n${'https://d.example/ok,fine\r\n'.repeat(30)}https://d.example/a,"bad"x\r\n`, 'text/csv');
    expect([quote.status, quote.body.code]).toEqual([400, 'INVALID_CSV']);
    expect(quote.body.details).toMatchObject({ row: 32, column: 'item.metadata.name' });
    const fields = await post(alice, 'item.href,item.metadata.name\r\nhttps://d.example/a,b,c\r\n', 'text/csv');
    expect([fields.status, fields.body.details.row]).toEqual([400, 2]);
    const short = await post(alice, 'item.href,item.metadata.name\r\nhttps://d.example/a,b\r\nhttps://d.example/c\r\n', 'text/csv');
    expect([short.status, short.body.code, short.body.details.row]).toEqual([400, 'INVALID_CSV', 3]);
    const rlist = await post(alice, '[DOCUMENT_1]\r\nHREF="https://d.example/a"\r\n[DOCUMENT_2]\r\nNAME="no href"\r\n', 'application/rli');
    expect([rlist.status, rlist.body.code, rlist.body.details]).toMatchObject([400, 'INVALID_RLIST', { section: 'DOCUMENT_2', key: 'HREF' }]);
    const broken = await post(alice, '[DOCUMENT_1]\r\nHREF="https://d.example/a"\r\n[DOCUMENT_2\r\nHREF="https://d.example/b"\r\n', 'application/rli');
    expect([broken.status, broken.body.code, broken.body.details.section]).toEqual([400, 'INVALID_RLIST', 'DOCUMENT_2']);
    const json = await alice.post('/v1/lists', { embedded: { listItems: [{ href: 'https://d.example/a' }, { href: '' }] } });
    expect([json.status, json.body.details.issues[0].path]).toEqual([400, 'body.embedded.listItems.1.href']);
    const deep = await post(alice, `{"metadata":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`, 'application/json');
    expect([deep.status, deep.body.code]).toEqual([400, 'JSON_TOO_DEEP']);
    const jsonNul = await alice.post('/v1/lists', { embedded: { listItems: [{ href: 'https://d.example/a', metadata: { k: 'x\u0000y' } }] } });
    expect([jsonNul.status, jsonNul.body.code]).toEqual([400, 'INVALID_CHARACTER']);
    const nul = await post(alice, 'item.href\r\nhttps://d.example/a\u0000b\r\n', 'text/csv');
    expect(nul.status).toBe(400);
    const tooMany = await post(alice, `item.href\r\n${'https://d.example/x\r\n'.repeat(51)}`, 'text/csv');
    expect([tooMany.status, tooMany.body.code, tooMany.body.details]).toEqual([413, 'LIST_TOO_LARGE', { maxItems: 50 }]);
    expect((await post(alice, CSV, 'text/csv; charset=latin1')).status).toBe(415);
    expect((await post(alice, CSV, 'image/png')).status).toBe(415);
    expect(await count()).toEqual(before);
  });

  it('500 and nothing created when the CSV import thread dies mid-body; the next import starts it again', async () => {
    const before = await count();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new TextEncoder().encode('item.href\r\nhttps://d.example/a\r\nhttps://d.example/b\r\n'));
        await gate;
        controller.enqueue(new TextEncoder().encode('https://d.example/c\r\n'));
        controller.close();
      },
    });
    const res = alice.request('POST', '/v1/lists', { body, headers: { 'content-type': 'text/csv' } });
    for (let i = 0; csvThread.imports === 0; i++) {
      expect(i).toBeLessThan(500);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    await csvThread.terminate();
    release();
    expect((await res).status).toBe(500);
    expect(await count()).toEqual(before);
    const next = await post(alice, CSV, 'text/csv');
    expect([next.status, next.body.count]).toEqual([200, 2]);
  });

  it('403 for a role that may only read', async () => {
    const res = await reader.post('/v1/lists', JSON_LIST);
    expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
  });
});

describe('GET /lists/{lid}: export by Accept', () => {
  it('JSON by default, with embeds; 406 when no format matches', async () => {
    const { lid } = await create(alice);
    const plain = await alice.get(`/v1/lists/${lid}`);
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({ lid, name: 'J', count: 2 });
    expect(plain.body.embedded).toBeUndefined();
    const full = await alice.get(`/v1/lists/${lid}?embed=items,permissions`);
    expect(full.body.embedded.permissions).toEqual({ read: true, write: true, delete: true });
    expect(full.body.embedded.listItems.map((i: { href: string; index: number }) => [i.index, i.href])).toEqual([[0, 'https://d.example/doc/1'], [1, 'https://d.example/doc/2']]);
    const no = await alice.get(`/v1/lists/${lid}`, { headers: { accept: 'image/png' } });
    expect([no.status, no.body.code]).toEqual([406, 'NOT_ACCEPTABLE']);
    expect((await alice.get(`/v1/lists/${lid}?embed=metadata`)).status).toBe(400);
    const csv = await alice.get(`/v1/lists/${lid}`, { headers: { accept: 'text/csv' } });
    expect(csv.contentType).toMatch(/^text\/csv/);
    expect(csv.body.split('\r\n')[0]).toBe('list.name,list.metadata.a.b,list.metadata.c,item.href,item.metadata.k');
    const rli = await alice.get(`/v1/lists/${lid}`, { headers: { accept: 'application/rli, text/csv;q=0.5' } });
    expect(rli.contentType).toMatch(/^application\/rli/);
    expect(rli.raw.toString()).toContain('[DOCUMENT_2]\r\nHREF="https://d.example/doc/2"');
  });

  it('export then import gives back the same list, in all three formats', async () => {
    const original = { name: 'Round, "trip"', metadata: { dept: 'ops', PROGRAM: { NAME: 'P' }, deep: { a: { b: 'c' } }, empty: '' },
      embedded: { listItems: Array.from({ length: 30 }, (_, i) => ({ href: `/v1/services/store/repo/${randomUUID()}`, metadata: { name: `n ${i}`, note: i % 2 ? 'line\nbreak' : '', x: { y: `é${i}` } } })) } };
    const { lid } = await create(alice, original);
    const read = async (id: string) => {
      const res = await alice.get(`/v1/lists/${id}?embed=items`);
      return { name: res.body.name, metadata: res.body.metadata, items: res.body.embedded.listItems.map((i: { href: string; metadata: unknown }) => ({ href: i.href, metadata: i.metadata })) };
    };
    const want = await read(lid);
    expect(want.items).toHaveLength(30);
    for (const [accept, type] of [['application/json', 'application/json'], ['text/csv', 'text/csv'], ['application/rli', 'application/rli']] as const) {
      const exported = await alice.get(`/v1/lists/${lid}${accept === 'application/json' ? '?embed=items' : ''}`, { headers: { accept } });
      expect(exported.status).toBe(200);
      const again = await post(alice, exported.raw.toString('utf8'), type);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(await read(again.body.lid), accept).toEqual(want);
    }
  });

  it("another user's list is 404 and shows nothing; a bad id is 400", async () => {
    const { lid } = await create(alice);
    for (const res of [
      await bob.get(`/v1/lists/${lid}`),
      await bob.get(`/v1/lists/${lid}`, { headers: { accept: 'text/csv' } }),
      await bob.get(`/v1/lists/${lid}/items`),
      await bob.put(`/v1/lists/${lid}`, { metadata: {} }),
      await bob.patch(`/v1/lists/${lid}`, { metadata: { x: '1' } }),
      await bob.delete(`/v1/lists/${lid}`),
      await bob.post(`/v1/lists/${lid}/items?href=https://d.example/x`),
    ]) {
      expect([res.status, res.body.code]).toEqual([404, 'LIST_NOT_FOUND']);
      expect(JSON.stringify(res.body)).not.toContain('https://d.example/doc/1');
    }
    expect((await alice.get(`/v1/lists/${lid}`)).body.count).toBe(2);
    expect((await admin.get(`/v1/lists/${lid}`)).status).toBe(200);
    expect((await alice.get('/v1/lists/not-a-uuid')).status).toBe(400);
    expect((await alice.get(`/v1/lists/${randomUUID()}`)).status).toBe(404);
  });
});

describe('PUT, PATCH, DELETE /lists/{lid}', () => {
  it('PUT replaces name and metadata, ignoring links and embedded; items unaffected', async () => {
    const { lid } = await create(alice);
    const got = (await alice.get(`/v1/lists/${lid}?embed=items`)).body;
    const res = await alice.put(`/v1/lists/${lid}`, { ...got, name: 'K', metadata: { only: 'this' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ lid, name: 'K', metadata: { only: 'this' }, count: 2 });
    const cleared = await alice.put(`/v1/lists/${lid}`, { metadata: {} });
    expect(cleared.body.name).toBeUndefined();
    expect((await alice.put(`/v1/lists/${lid}`, { metadata: [] })).status).toBe(400);
    expect((await alice.put(`/v1/lists/${lid}`, { metadata: {}, unknown: 1 })).status).toBe(400);
    expect((await alice.put(`/v1/lists/${randomUUID()}`, { metadata: {} })).status).toBe(404);
    expect((await reader.put(`/v1/lists/${lid}`, { metadata: {} })).status).toBe(403);
  });

  it('PATCH adds or replaces, removes none', async () => {
    const { lid } = await create(alice);
    const res = await alice.patch(`/v1/lists/${lid}`, { metadata: { a: { d: 2 }, e: 'new' }, links: { self: { href: 'x' } } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ name: 'J', metadata: { a: { b: 1, d: 2 }, c: [1, 'x'], e: 'new' } });
    expect((await alice.patch(`/v1/lists/${lid}`, { name: 'renamed' })).body).toMatchObject({ name: 'renamed', metadata: { e: 'new' } });
    expect((await alice.patch(`/v1/lists/${lid}`, { metadata: { bad: '\ud800' } })).status).toBe(400);
    expect((await alice.patch(`/v1/lists/${randomUUID()}`, { metadata: {} })).status).toBe(404);
  });

  it('DELETE removes the list and its items and keeps the documents', async () => {
    const doc = await admin.post('/v1/services/store/repo', { name: `kept-${randomUUID()}.txt` });
    expect(doc.status).toBe(200);
    const { lid } = await create(alice, { embedded: { listItems: [{ href: doc.body.links.self.href }] } });
    expect((await reader.delete(`/v1/lists/${lid}`)).status).toBe(403);
    const res = await alice.delete(`/v1/lists/${lid}`);
    expect(res.status).toBe(204);
    expect((await alice.get(`/v1/lists/${lid}`)).status).toBe(404);
    expect((await alice.delete(`/v1/lists/${lid}`)).status).toBe(404);
    const { rows } = await rt.services.db.query('SELECT 1 FROM list_items WHERE lid = $1', [lid]);
    expect(rows).toHaveLength(0);
    expect((await admin.get(doc.body.links.self.href)).status).toBe(200);
  });
});

describe('items', () => {
  it('GET items: references by default, full with embed=items; 404 for no items or no list', async () => {
    const empty = await create(alice, { name: 'empty' });
    const none = await alice.get(`/v1/lists/${empty.lid}/items`);
    expect([none.status, none.body.code]).toEqual([404, 'NO_ITEMS']);
    expect((await alice.get(`/v1/lists/${randomUUID()}/items`)).body.code).toBe('LIST_NOT_FOUND');
    const { lid } = await create(alice);
    const refs = await alice.get(`/v1/lists/${lid}/items`);
    expect(refs.status).toBe(200);
    expect(Object.keys(refs.body[0]).sort()).toEqual(['href', 'id', 'index', 'links']);
    const full = await alice.get(`/v1/lists/${lid}/items?embed=items,permissions&sort=-index&limit=1`);
    expect(full.body).toHaveLength(1);
    expect(full.body[0]).toMatchObject({ index: 1, href: 'https://d.example/doc/2', metadata: {}, embedded: { permissions: { read: true, write: true, delete: true } } });
    expect((await alice.get(`/v1/lists/${lid}/items?k=v`)).body.map((i: { index: number }) => i.index)).toEqual([0]);
    expect((await alice.get(`/v1/lists/${lid}/items?offset=5`)).status).toBe(404);
    expect((await alice.get(`/v1/lists/${lid}/items?limit=501`)).status).toBe(400);
  });

  it('POST appends by ?href= or by a JSON body; both or neither is 400', async () => {
    const { lid } = await create(alice);
    const byHref = await alice.post(`/v1/lists/${lid}/items?href=${encodeURIComponent('/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000009')}`);
    expect(byHref.status).toBe(200);
    expect(byHref.body).toMatchObject({ index: 2, href: '/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000009', metadata: {} });
    const byBody = await alice.post(`/v1/lists/${lid}/items`, { href: 'https://d.example/doc/4', metadata: { n: 4 } });
    expect(byBody.body).toMatchObject({ index: 3, href: 'https://d.example/doc/4', metadata: { n: 4 } });
    const both = await alice.post(`/v1/lists/${lid}/items?href=https://d.example/doc/5`, { href: 'https://d.example/doc/5' });
    expect([both.status, both.body.code]).toEqual([400, 'HREF_AND_BODY']);
    const neither = await alice.post(`/v1/lists/${lid}/items`);
    expect([neither.status, neither.body.code]).toEqual([400, 'BODY_REQUIRED']);
    expect((await alice.post(`/v1/lists/${lid}/items`, { metadata: {} })).status).toBe(400);
    expect((await alice.post(`/v1/lists/${lid}/items?href=`)).status).toBe(400);
    expect((await alice.post(`/v1/lists/${randomUUID()}/items?href=https://d.example/x`)).status).toBe(404);
    expect((await reader.post(`/v1/lists/${lid}/items?href=https://d.example/x`)).status).toBe(403);
    expect((await alice.get(`/v1/lists/${lid}`)).body.count).toBe(4);
  });

  it('GET, PUT, PATCH, DELETE by UUID; ids stay, indices stay consecutive, a deleted id is gone', async () => {
    const { lid } = await create(alice, { embedded: { listItems: [0, 1, 2, 3].map((i) => ({ href: `https://d.example/d/${i}`, metadata: { i, tag: { a: 'x' } } })) } });
    const items = (await alice.get(`/v1/lists/${lid}/items`)).body as { id: string; index: number }[];
    const [a, b, c, d] = items.map((i) => i.id);
    expect((await alice.get(`/v1/lists/${lid}/items/${b}`)).body).toMatchObject({ id: b, index: 1, href: 'https://d.example/d/1', metadata: { i: 1 } });
    expect((await alice.get(`/v1/lists/${lid}/items/1`)).status).toBe(400);
    expect((await alice.get(`/v1/lists/${lid}/items/${randomUUID()}`)).body.code).toBe('ITEM_NOT_FOUND');
    expect((await bob.get(`/v1/lists/${lid}/items/${b}`)).body.code).toBe('LIST_NOT_FOUND');

    const put = await alice.put(`/v1/lists/${lid}/items/${b}`, { href: 'https://d.example/new', metadata: { only: 1 }, id: 'ignored', index: 9 });
    expect(put.body).toMatchObject({ id: b, index: 1, href: 'https://d.example/new', metadata: { only: 1 } });
    const keepHref = await alice.put(`/v1/lists/${lid}/items/${b}`, { metadata: { z: 1 } });
    expect(keepHref.body).toMatchObject({ href: 'https://d.example/new', metadata: { z: 1 } });
    expect((await alice.put(`/v1/lists/${lid}/items/${randomUUID()}`, { href: 'https://d.example/x' })).status).toBe(404);

    const patch = await alice.patch(`/v1/lists/${lid}/items/${c}`, { metadata: { tag: { b: 'y' }, extra: true } });
    expect(patch.body).toMatchObject({ href: 'https://d.example/d/2', metadata: { i: 2, tag: { a: 'x', b: 'y' }, extra: true } });
    const onlyHref = await alice.patch(`/v1/lists/${lid}/items/${c}?href=https://d.example/moved`);
    expect(onlyHref.body).toMatchObject({ href: 'https://d.example/moved', metadata: { i: 2, tag: { a: 'x', b: 'y' }, extra: true } });
    expect((await alice.patch(`/v1/lists/${lid}/items/${c}?href=https://d.example/x`, { metadata: {} })).body.code).toBe('HREF_AND_BODY');
    expect((await alice.patch(`/v1/lists/${lid}/items/${c}`)).status).toBe(400);
    expect((await reader.patch(`/v1/lists/${lid}/items/${c}?href=https://d.example/x`)).status).toBe(403);

    expect((await alice.delete(`/v1/lists/${lid}/items/${b}`)).status).toBe(204);
    expect((await alice.delete(`/v1/lists/${lid}/items/${b}`)).status).toBe(404);
    expect((await alice.get(`/v1/lists/${lid}/items/${b}`)).status).toBe(404);
    const after = (await alice.get(`/v1/lists/${lid}/items`)).body.map((i: { id: string; index: number }) => [i.id, i.index]);
    expect(after).toEqual([[a, 0], [c, 1], [d, 2]]);
    const appended = await alice.post(`/v1/lists/${lid}/items?href=https://d.example/e`);
    expect(appended.body.index).toBe(3);
    expect([a, b, c, d]).not.toContain(appended.body.id);
    expect((await bob.delete(`/v1/lists/${lid}/items/${a}`)).status).toBe(404);
    expect((await alice.get(`/v1/lists/${lid}`)).body.count).toBe(4);
  });
});

describe('?href= import guards', () => {
  it('refuses a private address unless commands.importAllowPrivate (403 IMPORT_FORBIDDEN, nothing created)', async () => {
    const guarded = await startTestRuntime({ overrides: { commands: { importAllowPrivate: false } } });
    try {
      const c = guarded.client.withToken(await guarded.token('alice', ['user']));
      const res = await c.post(`/v1/lists?href=${encodeURIComponent(`${sourceUrl}/list.csv`)}`);
      expect([res.status, res.body.code]).toEqual([403, 'IMPORT_FORBIDDEN']);
      expect((await c.get('/v1/lists')).status).toBe(404);
    } finally {
      await guarded.close();
    }
  });
});
