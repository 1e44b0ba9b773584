import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countRows } from '../../helpers/databases.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { serveFiles, type HttpSource } from '../../helpers/http-source.js';

/**
 * A task's input and output lists over HTTP (real PostgreSQL and Redis):
 * metadata, items by id, reordering, append by ?href= or body, deletion with
 * ids never reused, the 409 while processing, CSV and RList create bodies
 * (streamed, all or nothing), and the content of an input item.
 */

let rt: TestRuntime;
let ann: TestClient;
let bob: TestClient;
let source: HttpSource;
let sourceUrl: string;
const base = '/v1/services/work/tasks';
const PAYLOAD = Buffer.alloc(256 * 1024, 'remote-bytes');

const counts = async () => [await countRows(rt.services.db, 'tasks'), await countRows(rt.services.db, 'lists'), await countRows(rt.services.db, 'list_items')];

async function mkTask(items: { href: string; metadata?: Record<string, unknown> }[], metadata: Record<string, unknown> = {}) {
  const res = await ann.post(base, { name: 'listed', lists: { input: { metadata, embedded: { listItems: items } } } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.tid as string;
}
const itemsOf = async (tid: string) => (await ann.get(`${base}/${tid}/input?embed=items`)).body.embedded.listItems as { id: string; index: number; href: string; metadata: Record<string, unknown> }[];
const hrefs = (n: number) => Array.from({ length: n }, (_, i) => ({ href: `https://example.com/${i}`, metadata: { n: String(i) } }));

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 10 } } } } } });
  ann = rt.client.withToken(await rt.token('ann', ['user']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  source = await serveFiles({ '/doc.pdf': { type: 'application/pdf', body: PAYLOAD, length: true } });
  sourceUrl = source.url;
});
afterAll(async () => {
  await rt.close();
  await source.close();
});

describe('input list metadata and order', () => {
  it('reads, replaces and merges the list metadata; items unaffected', async () => {
    const tid = await mkTask(hrefs(2), { a: { b: '1' }, c: '2' });
    const got = await ann.get(`${base}/${tid}/input`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ metadata: { a: { b: '1' }, c: '2' }, count: 2 });
    expect(got.body.embedded).toBeUndefined();
    const patched = await ann.patch(`${base}/${tid}/input`, { metadata: { a: { d: '3' } } });
    expect(patched.status).toBe(200);
    expect(patched.body.metadata).toEqual({ a: { b: '1', d: '3' }, c: '2' });
    const replaced = await ann.put(`${base}/${tid}/input?embed=items`, { metadata: { only: 'x' } });
    expect(replaced.status).toBe(200);
    expect(replaced.body.metadata).toEqual({ only: 'x' });
    expect(replaced.body.embedded.listItems).toHaveLength(2);
    expect((await ann.put(`${base}/${tid}/input`, { metadata: [] })).status).toBe(400);
    expect((await ann.get(`${base}/${tid}/input?embed=nope`)).body.code).toBe('INVALID_EMBED');
  });

  it('reorders by PATCH with item indices; ids stay with their items', async () => {
    const tid = await mkTask(hrefs(4));
    const before = await itemsOf(tid);
    const res = await ann.patch(`${base}/${tid}/input?embed=items`, { embedded: { listItems: [{ id: before[3]!.id, index: 0 }, { id: before[0]!.id, index: 2 }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const after = res.body.embedded.listItems as { id: string; index: number; href: string }[];
    expect(after.map((i) => i.href)).toEqual([3, 1, 0, 2].map((n) => `https://example.com/${n}`));
    expect(after.map((i) => i.index)).toEqual([0, 1, 2, 3]);
    expect(after.map((i) => i.id)).toEqual([3, 1, 0, 2].map((n) => before[n]!.id));
    for (const bad of [
      [{ id: before[0]!.id, index: 4 }],
      [{ id: before[0]!.id, index: 0 }, { id: before[1]!.id, index: 0 }],
      [{ id: '6f1c7c2e-0000-4000-8000-000000000000', index: 0 }],
    ]) {
      const r = await ann.patch(`${base}/${tid}/input`, { embedded: { listItems: bad } });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('INVALID_REORDER');
    }
    expect((await itemsOf(tid)).map((i) => i.id)).toEqual(after.map((i) => i.id));
  });
});

describe('input items', () => {
  it('appends by ?href= or a JSON body (both: 400, neither: 400)', async () => {
    const tid = await mkTask([]);
    const byQuery = await ann.post(`${base}/${tid}/input?href=${encodeURIComponent('https://example.com/q')}`);
    expect(byQuery.status, JSON.stringify(byQuery.body)).toBe(200);
    expect(byQuery.body).toMatchObject({ index: 0, href: 'https://example.com/q', metadata: {} });
    const byBody = await ann.post(`${base}/${tid}/input`, { href: 'https://example.com/b', metadata: { copies: 3 } });
    expect(byBody.body).toMatchObject({ index: 1, href: 'https://example.com/b', metadata: { copies: 3 } });
    const both = await ann.post(`${base}/${tid}/input?href=https://example.com/x`, { href: 'https://example.com/y' });
    expect(both.status).toBe(400);
    expect(both.body.code).toBe('HREF_AND_BODY');
    expect((await ann.post(`${base}/${tid}/input`)).body.code).toBe('BODY_REQUIRED');
    expect((await ann.post(`${base}/${tid}/input?href=file:///etc/passwd`)).body.code).toBe('INVALID_HREF');
    expect((await ann.post(`${base}/${tid}/input`, { metadata: {} })).body.code).toBe('VALIDATION_FAILED');
    expect((await itemsOf(tid)).map((i) => i.href)).toEqual(['https://example.com/q', 'https://example.com/b']);
  });

  it('reads, replaces, patches and deletes items; a deleted id is never reused, indices stay consecutive', async () => {
    const tid = await mkTask(hrefs(3));
    const [first, second, third] = await itemsOf(tid);
    const got = await ann.get(`${base}/${tid}/input/${second!.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: second!.id, index: 1, href: 'https://example.com/1', metadata: { n: '1' } });
    expect(got.body.links.content.href).toBe(`/v1/tasks/${tid}/input/${second!.id}/content`);
    const patched = await ann.patch(`${base}/${tid}/input/${second!.id}`, { metadata: { extra: 'e' } });
    expect(patched.body).toMatchObject({ href: 'https://example.com/1', metadata: { n: '1', extra: 'e' } });
    const replaced = await ann.put(`${base}/${tid}/input/${second!.id}`, { href: 'https://example.com/new' });
    expect(replaced.body).toMatchObject({ id: second!.id, href: 'https://example.com/new', metadata: {} });
    expect((await ann.put(`${base}/${tid}/input/${second!.id}`, { metadata: {} })).status).toBe(400);
    expect((await ann.delete(`${base}/${tid}/input/${first!.id}`)).status).toBe(204);
    const left = await itemsOf(tid);
    expect(left.map((i) => [i.id, i.index])).toEqual([[second!.id, 0], [third!.id, 1]]);
    const appended = await ann.post(`${base}/${tid}/input`, { href: 'https://example.com/again' });
    expect(appended.body.index).toBe(2);
    expect([first!.id, second!.id, third!.id]).not.toContain(appended.body.id);
    for (const res of [
      await ann.get(`${base}/${tid}/input/${first!.id}`),
      await ann.delete(`${base}/${tid}/input/${first!.id}`),
      await ann.patch(`${base}/${tid}/input/${first!.id}`, { metadata: {} }),
      await ann.put(`${base}/${tid}/input/${first!.id}`, { href: 'https://example.com/z' }),
    ]) {
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('ITEM_NOT_FOUND');
    }
    expect((await ann.get(`${base}/${tid}`)).body.modified).not.toBe(undefined);
  });

  it('refuses every change of the input list while the task is processing (409), reads still work', async () => {
    const tid = await mkTask(hrefs(2));
    const [item] = await itemsOf(tid);
    await rt.services.db.query("UPDATE tasks SET status = 'processing' WHERE tid = $1", [tid]);
    for (const res of [
      await ann.put(`${base}/${tid}/input`, { metadata: {} }),
      await ann.patch(`${base}/${tid}/input`, { metadata: { a: '1' } }),
      await ann.post(`${base}/${tid}/input?href=https://example.com/x`),
      await ann.put(`${base}/${tid}/input/${item!.id}`, { href: 'https://example.com/y' }),
      await ann.patch(`${base}/${tid}/input/${item!.id}`, { metadata: { a: '1' } }),
      await ann.delete(`${base}/${tid}/input/${item!.id}`),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.code).toBe('TASK_ACTIVE');
    }
    const items = await itemsOf(tid);
    expect(items.map((i) => [i.href, i.metadata])).toEqual(hrefs(2).map((i) => [i.href, i.metadata]));
    expect((await ann.get(`${base}/${tid}/input/${item!.id}`)).status).toBe(200);
  });
});

describe('output list', () => {
  it('shows what connectors wrote; items by id; 404 for others', async () => {
    const tid = await mkTask(hrefs(1));
    const empty = await ann.get(`${base}/${tid}/output?embed=items`);
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ count: 0, embedded: { listItems: [] } });
    // a connector's result, written through the list store as the actions will
    const { appendItem, getTaskList } = await import('../../../src/areas/lists/store/list-store.js');
    const out = (await getTaskList(rt.services.db, tid, 'output'))!;
    const row = (await appendItem(rt.services.db, out.lid, { href: '/v1/services/store/repo/6f1c7c2e-0000-4000-8000-000000000001', metadata: { result: 'ok' } }))!;
    const listed = await ann.get(`${base}/${tid}/output?embed=items`);
    expect(listed.body.embedded.listItems).toEqual([expect.objectContaining({ id: row.id, index: 0, metadata: { result: 'ok' } })]);
    const item = await ann.get(`${base}/${tid}/output/${row.id}`);
    expect(item.status).toBe(200);
    expect(item.body.links.content).toBeUndefined();
    expect((await ann.get(`${base}/${tid}/output/6f1c7c2e-0000-4000-8000-000000000000`)).body.code).toBe('ITEM_NOT_FOUND');
    expect((await ann.request('POST', `${base}/${tid}/output`, { json: { href: 'https://example.com' } })).status).toBe(405);
  });
});

describe('CSV and RList create bodies', () => {
  const post = (type: string, body: string, client = ann) => client.request('POST', base, { body, headers: { 'content-type': type } });

  it('fills the input list from CSV with default task metadata', async () => {
    const csv = 'list.name,list.metadata.tray,item.href,item.metadata.name,item.metadata.copies\r\n'
      + 'Monday,2,https://example.com/a.pdf,A,1\r\n'
      + ',,/v1/services/store/repo/6f1c7c2e-0000-4000-8000-000000000002,B,2\r\n';
    const res = await post('text/csv', csv);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ status: 'idle', creator: 'ann', metadata: {} });
    expect(res.body.name).toMatch(/^task /);
    const list = await ann.get(`${base}/${res.body.tid}/input?embed=items`);
    expect(list.body.metadata).toEqual({ tray: '2' });
    expect(list.body.embedded.listItems.map((i: { href: string; metadata: unknown }) => [i.href, i.metadata])).toEqual([
      ['https://example.com/a.pdf', { name: 'A', copies: '1' }],
      ['/v1/services/store/repo/6f1c7c2e-0000-4000-8000-000000000002', { name: 'B', copies: '2' }],
    ]);
    const found = await ann.get(`${base}?inputDocument=6f1c7c2e-0000-4000-8000-000000000002`);
    expect(found.body.map((t: { tid: string }) => t.tid)).toEqual([res.body.tid]);
  });

  it('fills the input list from RList (CRLF, comments, list sections)', async () => {
    const rli = [
      '; exported by a shop', '[JOBINFO]', 'OWNER="Ann"', '', '[DOCUMENT_1]', 'HREF="https://example.com/1.pdf"', 'NAME="One"',
      '[DOCUMENT_2]', 'HREF="https://example.com/2.pdf"', 'COPIES=3', '',
    ].join('\r\n');
    const res = await post('application/rli', rli);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const list = await ann.get(`${base}/${res.body.tid}/input?embed=items`);
    expect(list.body.metadata).toEqual({ JOBINFO: { OWNER: 'Ann' } });
    expect(list.body.embedded.listItems.map((i: { href: string }) => i.href)).toEqual(['https://example.com/1.pdf', 'https://example.com/2.pdf']);
  });

  it('refuses bad bodies with 400 naming row and column (or section and key), and creates nothing', async () => {
    const before = await counts();
    const rows = ['item.href,item.metadata.name', ...Array.from({ length: 3000 }, (_, i) => `https://example.com/${i},n${i}`)];
    const badRow = [...rows.slice(0, 2501), 'https://example.com/x,"unterminated', ...rows.slice(2501)].join('\n');
    const cases: [string, string, string, Record<string, unknown>][] = [
      ['text/csv', 'item.href,item.metadata.name\nhttps://example.com/a,A\n,B\n', 'INVALID_CSV', { row: 3, column: 'item.href' }],
      ['text/csv', 'item.metadata.name\nA\n', 'INVALID_CSV', { row: 1, column: 'item.href' }],
      ['text/csv', 'item.href,colour\nhttps://example.com/a,red\n', 'INVALID_CSV', { row: 1, column: 'colour' }],
      ['text/csv', badRow, 'INVALID_CSV', { row: 2502 }],
      ['text/csv', 'item.href,item.metadata.name\nhttps://example.com/a,A\nftp://h/b,B\n', 'INVALID_HREF', { row: 3, column: 'item.href' }],
      // the first bad row of the body is the one reported, whichever check finds it
      ['text/csv', 'item.href,item.metadata.name\nftp://h/b,B\nhttps://example.com/a,"unterminated\n', 'INVALID_HREF', { row: 2, column: 'item.href' }],
      ['text/csv', 'item.href,item.metadata.name\nftp://h/b,B\n,C\n', 'INVALID_HREF', { row: 2, column: 'item.href' }],
      ['text/csv', 'item.href,item.metadata.name\n,C\nftp://h/b,B\n', 'INVALID_CSV', { row: 2, column: 'item.href' }],
      ['application/rli', '[DOCUMENT_1]\r\nHREF="https://example.com/1"\r\n[DOCUMENT_2]\r\nNAME="no href"\r\n', 'INVALID_RLIST', { section: 'DOCUMENT_2', key: 'HREF' }],
      ['application/rli', '[DOCUMENT_1\r\nHREF="https://example.com/1"\r\n', 'INVALID_RLIST', {}],
      ['application/rli', '[DOCUMENT_1]\r\nHREF="c:\\\\local\\\\file.pdf"\r\n', 'INVALID_HREF', { section: 'DOCUMENT_1', key: 'HREF' }],
    ];
    for (const [type, body, code, details] of cases) {
      const res = await post(type, body);
      expect(res.status, `${code} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.code).toBe(code);
      expect(res.body.details).toMatchObject(details);
    }
    expect(await counts()).toEqual(before);
    expect((await post('text/csv; charset=latin1', 'item.href\nhttps://example.com/a\n')).status).toBe(415);
    expect((await post('text/csv', 'item.href\nhttps://example.com/a\n', bob)).status).toBe(200);
  });
});

describe('GET /tasks/{tid}/input/{id}/content', () => {
  it('streams a repository document through the repository, and an http(s) URL with the import guards', async () => {
    const doc = await ann.post('/v1/services/store/repo', { name: 'in.txt' });
    const put = await ann.request('PUT', `/v1/services/store/repo/${doc.body.uuid}/content`, { body: 'repository bytes', headers: { 'content-type': 'text/plain' } });
    expect(put.status).toBe(204);
    const tid = await mkTask([
      { href: `/v1/services/store/repo/${doc.body.uuid}` },
      { href: `${sourceUrl}/doc.pdf` },
      { href: `${sourceUrl}/missing.pdf` },
      { href: '/v1/services/store/repo/6f1c7c2e-0000-4000-8000-000000000003' },
    ]);
    const items = await itemsOf(tid);
    const repo = await ann.get(`/v1/tasks/${tid}/input/${items[0]!.id}/content`);
    expect(repo.status).toBe(200);
    expect(repo.contentType).toBe('application/octet-stream');
    expect(repo.raw.toString()).toBe('repository bytes');
    const remote = await ann.get(`/v1/tasks/${tid}/input/${items[1]!.id}/content`);
    expect(remote.status).toBe(200);
    expect(remote.raw.equals(PAYLOAD)).toBe(true);
    const gone = await ann.get(`/v1/tasks/${tid}/input/${items[2]!.id}/content`);
    expect(gone.status).toBe(502);
    expect(gone.body.code).toBe('IMPORT_FETCH_FAILED');
    expect((await ann.get(`/v1/tasks/${tid}/input/${items[3]!.id}/content`)).body.code).toBe('ENTRY_NOT_FOUND');
    expect((await ann.get(`/v1/tasks/${tid}/input/6f1c7c2e-0000-4000-8000-000000000000/content`)).body.code).toBe('ITEM_NOT_FOUND');
    expect((await ann.get(`/v1/tasks/6f1c7c2e-0000-4000-8000-000000000000/input/${items[0]!.id}/content`)).body.code).toBe('TASK_NOT_FOUND');
    // another user's task shows nothing, even where the document itself would be readable
    expect((await bob.get(`/v1/tasks/${tid}/input/${items[0]!.id}/content`)).status).toBe(404);
  });

  it('refuses private addresses unless imports may reach them; input lists past lists.maxItems are 413', async () => {
    const strict = await startTestRuntime({ overrides: { commands: { importAllowPrivate: false }, lists: { maxItems: 3 }, services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: {} } } } } });
    try {
      const client = strict.client.withToken(await strict.token('ann', ['user']));
      const made = await client.post(base, { name: 'private', lists: { input: { embedded: { listItems: [{ href: `${sourceUrl}/doc.pdf` }] } } } });
      const list = await client.get(`${base}/${made.body.tid}/input?embed=items`);
      const res = await client.get(`/v1/tasks/${made.body.tid}/input/${list.body.embedded.listItems[0].id}/content`);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('IMPORT_FORBIDDEN');
      const tasksBefore = (await client.get(`${base}?inlineCount=true`)).body.count;
      const csv = ['item.href', ...Array.from({ length: 4 }, (_, i) => `https://example.com/${i}`)].join('\n');
      const big = await client.request('POST', base, { body: csv, headers: { 'content-type': 'text/csv' } });
      expect(big.status).toBe(413);
      expect(big.body).toMatchObject({ code: 'LIST_TOO_LARGE', details: { maxItems: 3 } });
      expect((await client.get(`${base}?inlineCount=true`)).body.count).toBe(tasksBefore);
      const fits = await client.request('POST', base, { body: csv.split('\n').slice(0, 4).join('\n'), headers: { 'content-type': 'text/csv' } });
      expect(fits.status).toBe(200);
    } finally {
      await strict.close();
    }
  });
});
