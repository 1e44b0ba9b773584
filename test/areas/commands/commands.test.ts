import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { finish, launch, postEntry } from '../../helpers/repo.js';

let rt: TestRuntime;
let api: TestClient;
let source: http.Server;
let sourceUrl: string;
const base = '/v1/services/store/repo';
const PAYLOAD = Buffer.alloc(3 * 1024 * 1024, 'abcdefghij');

const mk = async (name: string, type?: 'document' | 'collection', parent?: string) => (await postEntry(api, base, name, type, parent)).uuid;

/** Launches a command on the store, expecting a UUID for its cid. */
async function launchHere(command: string, parameters: Record<string, unknown>) {
  const cid = await launch(api, 'store', command, parameters);
  expect(cid).toMatch(/^[0-9a-f-]{36}$/);
  return cid;
}

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  source = http.createServer((req, res) => {
    if (req.url === '/redirect') {
      res.writeHead(302, { location: '/files/report%20v1.pdf' });
      res.end();
    } else if (req.url === '/to-file') {
      res.writeHead(302, { location: 'file:///etc/passwd' });
      res.end();
    } else if (req.url === '/broken') {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': 1_000_000 });
      res.write(Buffer.alloc(1000));
      setTimeout(() => res.destroy(), 50);
    } else if (req.url === '/files/report%20v1.pdf') {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': PAYLOAD.length });
      res.end(PAYLOAD);
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
});
afterAll(async () => {
  source?.close();
  await rt?.close();
});

describe('repository commands', () => {
  it('import streams an http URL into a new document, with progress; the final state is delivered once', async () => {
    const folder = await mk('imports', 'collection');
    const cid = await launchHere('import', { url: `${sourceUrl}/files/report%20v1.pdf`, target: folder });
    const done = await finish(api, 'store', cid);
    expect(done).toMatchObject({ cid, command: 'import', state: 'success', progress: { done: PAYLOAD.length, total: PAYLOAD.length }, error: null });
    expect(done.result.sha256).toBe(createHash('sha256').update(PAYLOAD).digest('hex'));
    const entry = await api.get(done.result.href.replace(/^\/v1/, '/v1'));
    expect(entry.body).toMatchObject({ name: 'report v1.pdf', size: PAYLOAD.length, mimeType: 'application/pdf' });
    const content = await api.get(`${done.result.href}/content`);
    expect(content.raw.equals(PAYLOAD)).toBe(true);
    // delivered once: now it is gone
    expect((await api.get(`${base}/command/${cid}`)).status).toBe(404);
  });

  it('import failure: the source answers 404', async () => {
    const cid = await launchHere('import', { url: `${sourceUrl}/missing.pdf` });
    const done = await finish(api, 'store', cid);
    expect(done.state).toBe('failure');
    expect(done.error.code).toBe('IMPORT_FETCH_FAILED');
    expect(done.result).toBeNull();
  });

  it('import follows redirects; refuses a redirect to another scheme; a connection that breaks fails the command', async () => {
    const ok = await finish(api, 'store', await launchHere('import', { url: `${sourceUrl}/redirect`, name: 'via-redirect.pdf' }));
    expect(ok).toMatchObject({ state: 'success', result: { size: PAYLOAD.length } });
    const file = await finish(api, 'store', await launchHere('import', { url: `${sourceUrl}/to-file`, name: 'nope.txt' }));
    expect(file).toMatchObject({ state: 'failure', error: { code: 'IMPORT_FORBIDDEN' } });
    const broken = await finish(api, 'store', await launchHere('import', { url: `${sourceUrl}/broken`, name: 'broken.pdf' }));
    expect(broken.state).toBe('failure');
    const left = await api.get(`${base}?scope=root&name=broken.pdf`);
    expect(left.body.embedded.entries).toEqual([]); // no half-imported document
  });

  it('import refuses private addresses unless allowed', async () => {
    const strict = await startTestRuntime({ overrides: { commands: { importAllowPrivate: false } } });
    try {
      const c = strict.client.withToken(await strict.token('alice'));
      const res = await c.post(`${base}/command`, { command: 'import', parameters: { url: `${sourceUrl}/files/report%20v1.pdf` } });
      const done = await eventually(async () => {
        const s = await c.get(`${base}/command/${res.body.cid}`);
        return ['success', 'failure'].includes(s.body.state) ? s.body : undefined;
      });
      expect(done.error.code).toBe('IMPORT_FORBIDDEN');
      // a host name that resolves to loopback is caught at connect time
      const named = await c.post(`${base}/command`, { command: 'import', parameters: { url: sourceUrl.replace('127.0.0.1', 'localhost') + '/files/report%20v1.pdf' } });
      const byName = await eventually(async () => {
        const s = await c.get(`${base}/command/${named.body.cid}`);
        return ['success', 'failure'].includes(s.body.state) ? s.body : undefined;
      });
      expect(byName.error.code).toBe('IMPORT_FORBIDDEN');
    } finally {
      await strict.close();
    }
  });

  it('copy a collection tree; the copy shares content', async () => {
    const src = await mk('tree', 'collection');
    const doc = await mk('a.txt', 'document', src);
    await api.request('PUT', `${base}/${doc}/content`, { body: 'alpha', headers: { 'content-type': 'text/plain' } });
    const sub = await mk('sub', 'collection', src);
    await mk('b.txt', 'document', sub);
    const target = await mk('copies', 'collection');
    const done = await finish(api, 'store', await launchHere('copy', { source: src, target, name: 'tree-copy' }));
    expect(done.state).toBe('success');
    expect(done.result.entries).toBe(4);
    expect(done.progress).toEqual({ done: 4, total: 4 });
    const kids = await api.get(`${base}/${done.result.uuid}/children`);
    expect(kids.body.map((e: { name: string }) => e.name)).toEqual(['a.txt', 'sub']);
    const copyDoc = kids.body.find((e: { name: string }) => e.name === 'a.txt');
    expect((await api.get(`${base}/${copyDoc.uuid}/content`)).raw.toString()).toBe('alpha');
    expect(copyDoc.uuid).not.toBe(doc);
    // the original is untouched
    expect((await api.get(`${base}/${src}/children`)).body).toHaveLength(2);
  });

  it('move, with a name clash failing the command; delete', async () => {
    const a = await mk('move-src', 'collection');
    const b = await mk('move-dst', 'collection');
    const doc = await mk('moving.txt', 'document', a);
    const moved = await finish(api, 'store', await launchHere('move', { source: doc, target: b }));
    expect(moved.state).toBe('success');
    expect((await api.get(`${base}/${doc}`)).body.links.parent.href).toBe(`${base}/${b}`);
    await mk('moving.txt', 'document', a);
    const clash = await finish(api, 'store', await launchHere('move', { source: doc, target: a }));
    expect(clash).toMatchObject({ state: 'failure', error: { code: 'NAME_EXISTS' } });
    const del = await finish(api, 'store', await launchHere('delete', { source: b }));
    expect(del).toMatchObject({ state: 'success', result: { deleted: 2 } });
    expect((await api.get(`${base}/${doc}`)).status).toBe(404);
  });

  it('launch-time 409s: target not a collection, into itself, document in use', async () => {
    const col = await mk('c409', 'collection');
    const inner = await mk('inner', 'collection', col);
    const doc = await mk('d409.txt');
    expect((await api.post(`${base}/command`, { command: 'copy', parameters: { source: col, target: doc } })).status).toBe(409);
    const into = await api.post(`${base}/command`, { command: 'move', parameters: { source: col, target: inner } });
    expect(into.status).toBe(409);
    expect(into.body.code).toBe('TARGET_INSIDE_SOURCE');
    const tid = randomUUID();
    const lid = randomUUID();
    await rt.services.db.query(`INSERT INTO tasks (tid, sid, name, status) VALUES ($1, 'store', 't', 'processing')`, [tid]);
    await rt.services.db.query(`INSERT INTO lists (lid, kind, tid) VALUES ($1, 'input', $2)`, [lid, tid]);
    await rt.services.db.query(`INSERT INTO list_items (id, lid, position, href, doc_uuid) VALUES ($1, $2, 0, 'x', $3)`, [randomUUID(), lid, doc]);
    const busy = await api.post(`${base}/command`, { command: 'delete', parameters: { source: doc } });
    expect(busy.status).toBe(409);
    expect(busy.body.details.tasks[0].tid).toBe(tid);
    expect((await api.post(`${base}/command`, { command: 'delete', parameters: { source: doc, force: true } })).status).toBe(200);
  });

  it('404: unknown command id, a service without command support, an unknown source', async () => {
    expect((await api.get(`${base}/command/${randomUUID()}`)).status).toBe(404);
    const nocmd = await api.post('/v1/services/nocmd/repo/command', { command: 'delete', parameters: { source: randomUUID() } });
    expect(nocmd.status).toBe(404);
    expect(nocmd.body.code).toBe('NO_COMMANDS');
    expect((await api.get(`/v1/services/nocmd/repo/command/${randomUUID()}`)).status).toBe(404);
    expect((await api.post(`${base}/command`, { command: 'delete', parameters: { source: randomUUID() } })).status).toBe(404);
  });

  it("another user cannot read someone's command", async () => {
    const cid = await launchHere('import', { url: `${sourceUrl}/missing.pdf` });
    const bob = rt.client.withToken(await rt.token('bob', ['user']));
    expect((await bob.get(`${base}/command/${cid}`)).status).toBe(404);
    await finish(api, 'store', cid);
  });

  it('expired final commands are gone (404)', async () => {
    const cid = await launchHere('import', { url: `${sourceUrl}/missing.pdf` });
    await eventually(async () => {
      const { rows } = await rt.services.db.query<{ state: string }>('SELECT state FROM commands WHERE cid = $1', [cid]);
      return rows[0]?.state === 'failure' ? true : undefined;
    });
    await rt.services.db.query(`UPDATE commands SET expires = now() - interval '1 second' WHERE cid = $1`, [cid]);
    expect((await api.get(`${base}/command/${cid}`)).status).toBe(404);
    const { rows } = await rt.services.db.query('SELECT 1 FROM commands WHERE cid = $1', [cid]);
    expect(rows).toHaveLength(0);
  });
});
