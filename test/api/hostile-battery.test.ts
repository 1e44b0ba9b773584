import { createHash } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { rawJson } from '../helpers/client.js';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { killAll, startProcess, waitReady, type TestProcess } from '../helpers/process.js';
import { dropQueues, eventually } from '../helpers/runtime.js';

/**
 * The whole server as an attacker and a careless client would use it: a real
 * process, a battery of hostile requests across every route, then checks that
 * the process is alive, nothing answered 5xx, the log holds no unhandled
 * error, and the database and the `files` tree are exactly as before (the
 * hostile part changes nothing). A second part fires concurrent conflicting
 * writes and checks that rows and files still agree.
 */
const schema = uniqueName('hb');
const prefix = uniqueName('hb');
const IDLE_MS = 1500;
let dataDir: string;
let proc: TestProcess;
let base: string;
let admin: string;
let bob: string;
const statuses: { what: string; status: number }[] = [];

async function sqlClient(): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  return c;
}

beforeAll(async () => {
  dataDir = await tempDir('wcr-hb-');
  const config = path.join(dataDir, 'test.yaml');
  await writeFile(config, [
    'database:', `  url: ${TEST_DATABASE_URL}`, `  schema: ${schema}`,
    'redis:', `  url: ${TEST_REDIS_URL}`, `  prefix: ${prefix}`,
    'server:', '  jsonLimit: 64kb', '  maxUploadBytes: 1048576', `  bodyIdleTimeoutMs: ${IDLE_MS}`,
    'commands:', '  importAllowPrivate: false', '  importTimeoutMs: 5000',
    'services:',
    '  store: { type: store }',
    '  files: { type: filesystem, options: { root: files } }',
  ].join('\n'));
  proc = await startProcess('all', { DATA_DIR: dataDir, CONFIG: config });
  base = proc.url!;
  await waitReady(base);
  const issuer = await DevIssuer.open(dataDir, `${base}/dev-issuer`);
  admin = await issuer.mint({ user: 'alice', roles: ['admin'] });
  bob = await issuer.mint({ user: 'bob', roles: ['user'] });
}, 180_000);

afterAll(async () => {
  killAll();
  await dropSchema(schema);
  await dropQueues(prefix);
});

interface Req {
  method?: string;
  path: string;
  token?: string | null;
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

async function send(r: Req): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const headers: Record<string, string> = { ...r.headers };
  const token = r.token === undefined ? admin : r.token;
  if (token) headers.authorization = `Bearer ${token}`;
  let body: string | Buffer | undefined = r.body;
  if (r.json !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(r.json);
  }
  const res = await fetch(`${base}${r.path}`, { method: r.method ?? 'GET', headers, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  statuses.push({ what: `${r.method ?? 'GET'} ${r.path}`, status: res.status });
  return { status: res.status, body: parsed };
}

/** A raw socket request whose body never finishes: the server must cut it after the idle timeout. */
function stalledBody(pathName: string, token: string, contentType: string): Promise<{ ms: number; answer: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const sock = net.connect(Number(url.port), url.hostname);
    let answer = '';
    sock.on('data', (c) => { answer += c.toString(); });
    sock.on('error', () => undefined);
    sock.on('close', () => resolve({ ms: Date.now() - t0, answer }));
    sock.write(`PUT ${pathName} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: ${contentType}\r\nContent-Length: 100000\r\n\r\n${'x'.repeat(10)}`);
    setTimeout(() => { sock.destroy(); reject(new Error('the stalled request was still open after 60 s')); }, 60_000).unref();
  });
}

/** Rows that must not change, in a stable order, without volatile columns. */
async function dbSnapshot(): Promise<string> {
  const c = await sqlClient();
  try {
    await c.query(`SET search_path TO "${schema}"`);
    const e = await c.query(`SELECT uuid, sid, parent, name, type, metadata, creator, owner, path, size, mime_type, sha256, content_version
      FROM entries ORDER BY sid, uuid`);
    const cmds = await c.query('SELECT count(*)::int AS n FROM commands');
    return JSON.stringify({ entries: e.rows, commands: cmds.rows[0] });
  } finally {
    await c.end();
  }
}

async function treeSnapshot(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const d of await readdir(path.join(dir, rel), { withFileTypes: true })) {
    const p = path.join(rel, d.name);
    if (d.isDirectory()) out.push(`${p}/`, ...(await treeSnapshot(dir, p)));
    else out.push(`${p} ${createHash('sha256').update(await readFile(path.join(dir, p))).digest('hex')}`);
  }
  return out.sort();
}

/** Every 'files' row (but the root) has its object on disk, every object its row, and no row lost its creator. */
async function filesAgree(): Promise<void> {
  // a listing syncs rows with the disk first
  expect((await send({ path: '/v1/services/files/repo?scope=all&limit=500' })).status).toBe(200);
  const c = await sqlClient();
  try {
    await c.query(`SET search_path TO "${schema}"`);
    const { rows } = await c.query<{ path: string; type: string; creator: string | null; name: string; parent: string }>(
      "SELECT path, type, creator, name, parent FROM entries WHERE sid = 'files' AND parent IS NOT NULL");
    const disk = new Set((await treeSnapshot(path.join(dataDir, 'files'))).map((l) => l.split(' ')[0]!.replace(/\/$/, '')));
    const inDb = new Set(rows.map((r) => r.path));
    expect([...disk].filter((p) => !inDb.has(p)), 'files on disk without a row').toEqual([]);
    expect([...inDb].filter((p) => !disk.has(p)), 'rows without a file').toEqual([]);
    expect(rows.filter((r) => !r.creator), 'rows without a creator').toEqual([]);
    const siblings = new Set<string>();
    for (const r of rows) {
      const key = `${r.parent}/${r.name}`;
      expect(siblings.has(key), `two entries named ${key}`).toBe(false);
      siblings.add(key);
    }
  } finally {
    await c.end();
  }
}

const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
/** JSON text of metadata nested `n` levels deep (too deep for JSON.stringify's stack in a test worker). */
const deepJson = (n: number) => `${'{"a":'.repeat(n)}"x"${'}'.repeat(n)}`;

describe('a battery of hostile requests', () => {
  const ids: Record<string, string> = {};

  it('setup: documents and collections in both repositories', async () => {
    for (const sid of ['store', 'files']) {
      const col = await send({ method: 'POST', path: `/v1/services/${sid}/repo`, json: { name: 'col', type: 'collection' } });
      expect(col.status).toBe(200);
      const doc = await send({ method: 'POST', path: `/v1/services/${sid}/repo/${col.body.uuid}`, json: { name: 'doc.txt', type: 'document', metadata: { n: 1 } } });
      expect(doc.status).toBe(200);
      const put = await send({ method: 'PUT', path: `/v1/services/${sid}/repo/${doc.body.uuid}/content`, body: 'hello', headers: { 'content-type': 'text/plain' } });
      expect(put.status).toBe(204);
      const other = await send({ method: 'POST', path: `/v1/services/${sid}/repo`, json: { name: 'other.txt', type: 'document' } });
      const mine = await send({ method: 'POST', path: `/v1/services/${sid}/repo`, token: bob, json: { name: 'bob.txt', type: 'document' } });
      ids[`${sid}.col`] = col.body.uuid;
      ids[`${sid}.doc`] = doc.body.uuid;
      ids[`${sid}.other`] = other.body.uuid;
      ids[`${sid}.bob`] = mine.body.uuid;
    }
  });

  it('hostile requests across every route: only 4xx, nothing changes, the process lives, no unhandled error', async () => {
    const before = await dbSnapshot();
    const treeBefore = await treeSnapshot(path.join(dataDir, 'files'));
    const reqs: Req[] = [];
    const hostileJson = ['{', '{"name":', 'null', '[]', '"x"', '1e999', deep(100_000), `{${'"k":1,'.repeat(20_000)}"z":1}`];
    const protoBodies: unknown[] = [
      JSON.parse('{"__proto__":{"admin":true},"name":"p1","type":"document"}'),
      { constructor: { prototype: { polluted: true } }, name: 'p2', type: 'document' },
      { name: '__proto__', type: 'documentx' },
      { name: 'p3', type: 'document', metadata: JSON.parse('{"__proto__":{"x":1},"constructor":{"prototype":{"y":1}}}') },
    ];
    const nulBodies: unknown[] = [
      { name: 'a\u0000b', type: 'document' },
      { name: 'n1', type: 'document', metadata: { 'k\u0000': 'v' } },
      { name: 'n2', type: 'document', metadata: { k: 'v\u0000' } },
      { name: 'n3', type: 'document', metadata: { k: ['x', { y: '\u0000' }] } },
    ];
    const badNames = ['..', '.', '../../escape.txt', 'a/b', 'a\\b', 'x'.repeat(300), 'é'.repeat(256), 'del\u007f', 'c1\u0085', 'tab\t', ''];
    const regexes = ['/a{99999}/', '/\\1/', '/(?<n>a)\\k<n>/', '/(?<=a)b/', '/[/', '/(/', '/a**/', '/\\p{L}/u', '/x/g'];
    const protoKeys = ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', 'prototype', '__defineGetter__'];

    for (const sid of ['store', 'files']) {
      const repo = `/v1/services/${sid}/repo`;
      const doc = ids[`${sid}.doc`]!;
      const col = ids[`${sid}.col`]!;
      for (const raw of hostileJson) {
        for (const [method, p] of [['POST', repo], ['POST', `${repo}/${col}`], ['PUT', `${repo}/${doc}`], ['PATCH', `${repo}/${doc}`], ['POST', `${repo}/command`], ['POST', '/v1/repo/inactives']] as const) {
          reqs.push({ method, path: p, body: raw, headers: { 'content-type': 'application/json' } });
        }
      }
      for (const b of [...protoBodies, ...nulBodies]) {
        reqs.push({ method: 'POST', path: repo, json: b }, { method: 'PATCH', path: `${repo}/${doc}`, json: b }, { method: 'PUT', path: `${repo}/${doc}`, json: b });
      }
      // 200 characters but 400 bytes: a valid name in the database, too long for a file system
      for (const name of sid === 'files' ? [...badNames, 'é'.repeat(200)] : badNames) {
        reqs.push({ method: 'POST', path: repo, json: { name, type: 'document' } });
        reqs.push({ method: 'PATCH', path: `${repo}/${doc}`, json: { name } });
        reqs.push({ method: 'PATCH', path: `${repo}/${doc}`, json: { name, metadata: { bad: 'x\u0000' } } });
        reqs.push({ method: 'PUT', path: `${repo}/${doc}`, ...rawJson(`{"name":${JSON.stringify(name)},"metadata":${deepJson(5000)}}`) });
        reqs.push({ method: 'POST', path: `${repo}/command`, json: { command: 'copy', parameters: { source: doc, target: col, name } } });
        reqs.push({ method: 'POST', path: `${repo}/command`, json: { command: 'move', parameters: { source: doc, target: col, name } } });
      }
      // a rename with metadata that cannot be stored must not rename
      reqs.push({ method: 'PATCH', path: `${repo}/${doc}`, json: { name: 'renamed.txt', metadata: { k: 'v\u0000' } } });
      reqs.push({ method: 'PATCH', path: `${repo}/${doc}`, ...rawJson(`{"name":"renamed.txt","metadata":${deepJson(5000)}}`) });
      reqs.push({ method: 'PATCH', path: `${repo}/${doc}`, ...rawJson(`{"name":"renamed.txt","metadata":${deepJson(200)}}`) });
      for (const re of regexes) {
        reqs.push({ path: `${repo}?name=${encodeURIComponent(re)}` }, { path: `${repo}/${col}/children?metadata.n=${encodeURIComponent(re)}` });
      }
      for (const k of protoKeys) {
        reqs.push({ path: `${repo}?${k}=x` }, { path: `${repo}?sort=${k}` }, { path: `${repo}?sort=-${k}` }, { path: `${repo}/${col}/children?${k}=x&sort=${k}` });
        reqs.push({ path: `${repo}/${doc}?embed=${k}` }, { path: `/v1/services/${k}` }, { path: `/v1/services/${k}/repo` });
      }
      for (const q of ['name=a%00b', 'metadata.n=%00', '%00=x', 'limit=-1', 'limit=501', 'limit=1e3', 'limit=abc', 'offset=99999999999999', 'sort=,,,', 'sort=a,b,c,d,e,f,g,h,i', 'limit=1&limit=2', 'scope=none', `${'a'.repeat(70)}=x`, 'a..b=1', 'metadata.=1']) {
        reqs.push({ path: `${repo}?${q}` });
      }
      for (const p of [`${repo}/%00`, `${repo}/..%2f..%2fetc%2fpasswd`, `${repo}/${doc}%00`, `${repo}/${'f'.repeat(5000)}`, `/v1/services/${'s'.repeat(3000)}/repo`, `/v1/services/..%2f/repo`]) {
        reqs.push({ path: p }, { method: 'DELETE', path: p });
      }
      for (const range of ['bytes=abc', 'bytes=99999999999999999999-', 'bytes=5-1', 'bytes=-0', 'bytes=0-0,1-1']) {
        reqs.push({ path: `${repo}/${doc}/content`, headers: { range } });
      }
      reqs.push({ path: `${repo}/${doc}/content`, headers: { range: 'bytes=0-1', 'if-range': '"stale"' } });
      reqs.push({ method: 'PUT', path: `${repo}/${doc}/content`, body: 'changed', headers: { 'content-type': 'text/plain', 'if-match': '"stale"' } });
      reqs.push({ method: 'PUT', path: `${repo}/${doc}/content`, body: 'x', headers: { 'content-type': 'not a type' } });
      reqs.push({ method: 'PUT', path: `${repo}/${doc}/content`, body: Buffer.alloc(2 * 1024 * 1024), headers: { 'content-type': 'application/octet-stream' } });
      reqs.push({ method: 'POST', path: repo, body: JSON.stringify({ name: 'big', type: 'document', metadata: { s: 'x'.repeat(100_000) } }), headers: { 'content-type': 'application/json' } });
      reqs.push({ method: 'POST', path: repo, json: { name: 'own', type: 'document' }, headers: { 'x-owner': 'y'.repeat(1000) } });
      reqs.push({ method: 'POST', path: repo, token: bob, json: { name: 'own2', type: 'document' }, headers: { 'x-owner': 'carol' } });
      // another user's objects, and a read-only caller writing
      reqs.push({ method: 'DELETE', path: `${repo}/${doc}`, token: bob }, { method: 'PATCH', path: `${repo}/${doc}`, token: bob, json: { name: 'mine' } });
      reqs.push({ method: 'PUT', path: `${repo}/${doc}/content`, token: bob, body: 'x', headers: { 'content-type': 'text/plain' } });
      reqs.push({ method: 'POST', path: `${repo}/command`, token: bob, json: { command: 'delete', parameters: { source: doc } } });
      // commands with hostile parameters
      for (const parameters of [{ source: doc, target: doc }, { source: col, target: col }, { source: 'x' }, { url: 'file:///etc/passwd' }, { url: 'gopher://x' }, { url: 'http://' }, JSON.parse('{"__proto__":{"url":"http://x"}}')]) {
        for (const command of ['copy', 'move', 'delete', 'import', 'preview', '__proto__', 'constructor']) reqs.push({ method: 'POST', path: `${repo}/command`, json: { command, parameters } });
      }
      reqs.push({ path: `${repo}/command/not-a-uuid` }, { path: `${repo}/command/00000000-0000-0000-0000-000000000000` });
      for (const m of ['PROPFIND', 'OPTIONS', 'PURGE']) reqs.push({ method: m, path: `${repo}/${doc}` });
    }
    // tokens whose roles are object-prototype names
    const issuer = await DevIssuer.open(dataDir, `${base}/dev-issuer`);
    for (const role of protoKeys) {
      const t = await issuer.mint({ user: `r-${role}`, roles: [role] });
      reqs.push({ path: '/v1/services', token: t }, { path: '/v1/services/store/repo', token: t }, { method: 'POST', path: '/v1/services/store/repo', token: t, json: { name: `r-${role}`, type: 'document' } });
    }
    for (const t of ['x', 'a.b.c', `${'a'.repeat(10_000)}.b.c`]) reqs.push({ path: '/v1/services', token: t });

    const failures: string[] = [];
    // in small parallel waves: hostile clients do not wait for each other
    for (let i = 0; i < reqs.length; i += 16) {
      const wave = await Promise.all(reqs.slice(i, i + 16).map(async (r) => ({ r, res: await send(r) })));
      for (const { r, res } of wave) {
        const shape = res.status < 400 || (typeof res.body === 'object' && res.body?.status === res.status && typeof res.body.code === 'string');
        if (res.status >= 500 || !shape) failures.push(`${r.method ?? 'GET'} ${r.path.slice(0, 100)} ${JSON.stringify(r.json ?? r.body ?? '').slice(0, 100)} -> ${res.status} ${JSON.stringify(res.body).slice(0, 160)}`);
      }
    }
    // every answer was a 4xx (or a success) with the error body
    expect(failures).toEqual([]);
    // bodies that never finish: cut after the idle timeout, not held open
    const stalled = await Promise.all([
      stalledBody(`/v1/services/store/repo/${ids['store.doc']}/content`, admin, 'text/plain'),
      stalledBody(`/v1/services/files/repo/${ids['files.doc']}/content`, admin, 'text/plain'),
      stalledBody(`/v1/services/store/repo/${ids['store.doc']}`, admin, 'application/json'),
    ]);
    for (const s of stalled) {
      expect(s.ms).toBeLessThan(IDLE_MS + 20_000);
      expect(s.answer).not.toMatch(/^HTTP\/1\.1 5/);
    }
    // launched commands finish; none of them created anything
    await eventually(async () => {
      const c = await sqlClient();
      try {
        await c.query(`SET search_path TO "${schema}"`);
        const { rows } = await c.query<{ n: number }>("SELECT count(*)::int AS n FROM commands WHERE state NOT IN ('success', 'failure')");
        return rows[0]!.n === 0 ? true : undefined;
      } finally { await c.end(); }
    }, 60_000, 250);
    const after = JSON.parse(await dbSnapshot());
    const was = JSON.parse(before);
    expect(after.entries).toEqual(was.entries);
    expect(await treeSnapshot(path.join(dataDir, 'files'))).toEqual(treeBefore);
    // the commands that failed carry stable codes and plain messages
    const c = await sqlClient();
    try {
      await c.query(`SET search_path TO "${schema}"`);
      const { rows } = await c.query<{ error: { code: string; message: string } | null }>('SELECT error FROM commands WHERE error IS NOT NULL');
      for (const { error } of rows) {
        expect(error!.code).not.toBe('COMMAND_FAILED');
        expect(error!.message).not.toMatch(/ECONN|EHOSTUNREACH|ENOTFOUND|duplicate key|violates|SQLSTATE|at .*\.js:\d+/);
      }
    } finally { await c.end(); }
    // alive, and the log holds no unhandled error
    expect(proc.child.exitCode).toBeNull();
    expect((await send({ path: '/healthz', token: null })).status).toBe(200);
    const bad = proc.logs.filter((l) => /unhandled|uncaught|"level":(5|6)0/i.test(l));
    expect(bad, bad.slice(0, 3).join('\n')).toEqual([]);
    expect(statuses.filter((s) => s.status >= 500)).toEqual([]);
  }, 600_000);

  it('concurrent conflicting writes: no 5xx, rows and files agree afterwards', async () => {
    const repo = '/v1/services/files/repo';
    for (let round = 0; round < 8; round++) {
      const doc = await send({ method: 'POST', path: repo, json: { name: `race-${round}.txt`, type: 'document' } });
      const a = await send({ method: 'POST', path: repo, json: { name: `a-${round}`, type: 'document' } });
      const b = await send({ method: 'POST', path: repo, json: { name: `b-${round}`, type: 'document' } });
      const results = await Promise.all([
        send({ method: 'PUT', path: `${repo}/${doc.body.uuid}/content`, body: Buffer.alloc(256 * 1024, round), headers: { 'content-type': 'application/octet-stream' } }),
        send({ method: 'DELETE', path: `${repo}/${doc.body.uuid}` }),
        send({ method: 'PATCH', path: `${repo}/${a.body.uuid}`, json: { name: `same-${round}` } }),
        send({ method: 'PATCH', path: `${repo}/${b.body.uuid}`, json: { name: `same-${round}` } }),
        send({ method: 'POST', path: repo, json: { name: `dup-${round}`, type: 'collection' } }),
        send({ method: 'POST', path: repo, json: { name: `dup-${round}`, type: 'document' } }),
      ]);
      for (const r of results) expect(r.status).toBeLessThan(500);
      // the deleted document never comes back
      const del = results[1]!;
      if (del.status === 204) expect((await send({ path: `${repo}/${doc.body.uuid}` })).status).toBe(404);
    }
    await filesAgree();
    expect(proc.child.exitCode).toBeNull();
    const st = await stat(path.join(dataDir, 'files'));
    expect(st.isDirectory()).toBe(true);
  }, 300_000);
});
