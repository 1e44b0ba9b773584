import http from 'node:http';
import { mkdir, readFile, rm, stat, symlink, writeFile, rename as fsRename } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { pathExists, tempDir } from '../../helpers/fs.js';
import { postEntry, runCommand } from '../../helpers/repo.js';

/** The Repositories rows for the `filesystem` connector, and every way out of its root we could think of. */
let rt: TestRuntime;
let api: TestClient;
let root: string;
let outside: string;
const base = '/v1/services/files/repo';

const mk = async (name: string, type?: 'document' | 'collection', parent?: string) => (await postEntry(api, base, name, type, parent)).uuid;

/** A request whose path reaches the server byte for byte (fetch would normalize dot segments). */
function raw(method: string, rawPath: string, token: string): Promise<{ status: number; body: string }> {
  const url = new URL(rt.url!);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: rawPath, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  root = path.join(rt.dataDir, 'files');
  outside = await tempDir('wcr-outside-');
  await writeFile(path.join(outside, 'secret.txt'), 'top secret');
});
afterAll(async () => {
  await rt?.close();
});

describe('filesystem repository', () => {
  it('create in root and in a collection makes directories and files on disk', async () => {
    const dir = await mk('invoices', 'collection');
    const doc = await mk('march.pdf', 'document', dir);
    expect((await stat(path.join(root, 'invoices'))).isDirectory()).toBe(true);
    expect((await stat(path.join(root, 'invoices', 'march.pdf'))).isFile()).toBe(true);
    const res = await api.get(`${base}/${doc}`);
    expect(res.body).toMatchObject({ name: 'march.pdf', type: 'document', size: 0, mimeType: 'application/pdf' });
    expect((await api.post(`${base}/${doc}`, { name: 'x', type: 'document' })).status).toBe(405);
    expect((await api.post(`${base}/${dir}`, { name: 'march.pdf', type: 'document' })).status).toBe(409);
  });

  it('files that appear on disk are listed; vanished ones are gone', async () => {
    await mkdir(path.join(root, 'dropped'), { recursive: true });
    await writeFile(path.join(root, 'dropped', 'scan-1.png'), 'png');
    await writeFile(path.join(root, 'dropped', 'scan-2.png'), 'png2');
    const rootList = await api.get(`${base}?scope=root&limit=500`);
    const dropped = rootList.body.embedded.entries.find((e: { name: string }) => e.name === 'dropped');
    expect(dropped.type).toBe('collection');
    const kids = await api.get(`${base}/${dropped.uuid}/children`);
    expect(kids.body.map((e: { name: string }) => e.name)).toEqual(['scan-1.png', 'scan-2.png']);
    const second = kids.body[1].uuid as string;
    await rm(path.join(root, 'dropped', 'scan-2.png'));
    expect((await api.get(`${base}/${second}`)).status).toBe(404);
    expect((await api.get(`${base}/${dropped.uuid}/children`)).body).toHaveLength(1);
    const all = await api.get(`${base}?scope=all&limit=500`);
    expect(all.body.embedded.entries.map((e: { name: string }) => e.name)).toContain('scan-1.png');
  });

  it('content: upload streams to the file, download with headers and ETag; DELETE content is refused (405)', async () => {
    const doc = await mk('note.txt');
    const put = await api.request('PUT', `${base}/${doc}/content`, { body: 'hello files', headers: { 'content-type': 'text/plain' } });
    expect(put.status).toBe(204);
    expect(await readFile(path.join(root, 'note.txt'), 'utf8')).toBe('hello files');
    const get = await api.get(`${base}/${doc}/content`);
    expect(get.raw.toString()).toBe('hello files');
    expect(get.headers.get('content-length')).toBe('11');
    expect(get.headers.get('etag')).toBe(put.headers.get('etag'));
    const del = await api.delete(`${base}/${doc}/content`);
    expect(del.status).toBe(405);
    expect(del.body.code).toBe('CONTENT_DELETE_UNSUPPORTED');
    expect(await readFile(path.join(root, 'note.txt'), 'utf8')).toBe('hello files');
    const col = await mk('no-bytes', 'collection');
    expect((await api.request('PUT', `${base}/${col}/content`, { body: 'x' })).status).toBe(406);
    expect((await api.get(`${base}/${col}/content`)).status).toBe(404);
  });

  it('rename through PUT/PATCH renames on disk, children follow', async () => {
    const dir = await mk('old-name', 'collection');
    const doc = await mk('child.txt', 'document', dir);
    await api.request('PUT', `${base}/${doc}/content`, { body: 'kid', headers: { 'content-type': 'text/plain' } });
    expect((await api.patch(`${base}/${dir}`, { name: 'new-name', metadata: { label: 'x' } })).status).toBe(200);
    expect(await pathExists(path.join(root, 'old-name'))).toBe(false);
    expect(await readFile(path.join(root, 'new-name', 'child.txt'), 'utf8')).toBe('kid');
    expect((await api.get(`${base}/${doc}/content`)).raw.toString()).toBe('kid');
    expect((await api.get(`${base}/${dir}`)).body.metadata).toEqual({ label: 'x' });
  });

  it('delete removes from disk; a collection with everything in it', async () => {
    const dir = await mk('trash', 'collection');
    await mk('junk.txt', 'document', dir);
    expect((await api.delete(`${base}/${dir}`)).status).toBe(204);
    expect(await pathExists(path.join(root, 'trash'))).toBe(false);
  });

  it('commands: copy and move on disk', async () => {
    const src = await mk('cmd-src', 'collection');
    const doc = await mk('paper.txt', 'document', src);
    await api.request('PUT', `${base}/${doc}/content`, { body: 'paper', headers: { 'content-type': 'text/plain' } });
    const dst = await mk('cmd-dst', 'collection');
    expect((await runCommand(api, base, 'copy', { source: src, target: dst })).state).toBe('success');
    expect(await readFile(path.join(root, 'cmd-dst', 'cmd-src', 'paper.txt'), 'utf8')).toBe('paper');
    expect((await runCommand(api, base, 'move', { source: doc, target: dst, name: 'moved.txt' })).state).toBe('success');
    expect(await readFile(path.join(root, 'cmd-dst', 'moved.txt'), 'utf8')).toBe('paper');
    expect(await pathExists(path.join(root, 'cmd-src', 'paper.txt'))).toBe(false);
  });
});

describe('no way out of the root', () => {
  it('names with "..", slashes, backslashes or absolute paths are refused; nothing is written outside', async () => {
    for (const name of ['..', '.', '../escape.txt', '../../etc/passwd', 'a/b', '/etc/passwd', 'a\\b', '..\\x', 'nul\u0000byte']) {
      const res = await api.post(base, { name, type: 'document' });
      expect(res.status, name).toBe(400);
      // NUL is refused for any JSON body before names are looked at
      expect(res.body.code).toBe(name.includes('\u0000') ? 'INVALID_CHARACTER' : 'INVALID_NAME');
    }
    expect(await pathExists(path.join(rt.dataDir, 'escape.txt'))).toBe(false);
    // rename to an escaping name
    const doc = await mk('stay.txt');
    expect((await api.patch(`${base}/${doc}`, { name: '../stay.txt' })).status).toBe(400);
    expect(await pathExists(path.join(root, 'stay.txt'))).toBe(true);
  });

  it('a literal "%2e%2e" name is just a file inside the root', async () => {
    const doc = await mk('%2e%2e');
    expect(await pathExists(path.join(root, '%2e%2e'))).toBe(true);
    expect((await api.get(`${base}/${doc}`)).body.name).toBe('%2e%2e');
  });

  it('encoded slashes and dot segments in URLs never reach the file system', async () => {
    const token = api.token!;
    for (const p of [`${base}/..%2F..%2Fetc%2Fpasswd`, `${base}/%2e%2e%2f%2e%2e%2fetc/content`, `${base}/../../../../etc/passwd`, `${base}/..%5c..%5cetc`]) {
      const res = await raw('GET', p, token);
      expect([400, 404], p).toContain(res.status);
      expect(res.body).not.toContain('root:');
      expect(JSON.parse(res.body).status).toBe(res.status);
    }
  });

  it('symlinks inside the root are never listed or followed', async () => {
    await symlink(path.join(outside, 'secret.txt'), path.join(root, 'link-to-secret.txt'));
    await symlink(outside, path.join(root, 'link-to-outside'));
    const all = await api.get(`${base}?scope=all&limit=500`);
    const names = all.body.embedded.entries.map((e: { name: string }) => e.name);
    expect(names).not.toContain('link-to-secret.txt');
    expect(names).not.toContain('link-to-outside');
    expect(names).not.toContain('secret.txt');
  });

  it('a collection swapped for a symlink to the outside: no reads, writes or listings through it', async () => {
    const dir = await mk('swapped', 'collection');
    const doc = await mk('inner.txt', 'document', dir);
    await api.request('PUT', `${base}/${doc}/content`, { body: 'inner', headers: { 'content-type': 'text/plain' } });
    await fsRename(path.join(root, 'swapped'), path.join(rt.dataDir, 'swapped-away'));
    await mkdir(path.join(outside, 'swapped'), { recursive: true });
    await writeFile(path.join(outside, 'inner.txt'), 'OUTSIDE');
    await symlink(outside, path.join(root, 'swapped'));
    const read = await api.get(`${base}/${doc}/content`);
    expect([403, 404]).toContain(read.status);
    expect(read.raw.toString()).not.toContain('OUTSIDE');
    const write = await api.request('PUT', `${base}/${doc}/content`, { body: 'pwned', headers: { 'content-type': 'text/plain' } });
    expect([403, 404]).toContain(write.status);
    expect(await readFile(path.join(outside, 'inner.txt'), 'utf8')).toBe('OUTSIDE');
    const kids = await api.get(`${base}/${dir}/children`);
    expect([403, 404]).toContain(kids.status);
    expect(await readFile(path.join(outside, 'secret.txt'), 'utf8')).toBe('top secret');
  });
});
