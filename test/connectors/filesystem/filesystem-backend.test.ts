import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { filesystemConnectorType } from '../../../src/connectors/filesystem/filesystem-connector.js';
import { rewritePaths } from '../../../src/areas/repository/entry-store.js';
import type { ConnectorContext } from '../../../src/connectors/connector.js';
import { fingerprint } from '../../../src/connectors/filesystem/filesystem-sync.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { createLogger } from '../../../src/logging/logger.js';
import { allPaths, body, createEntry, errorCode, fakeRow, type Env , useFsEnv } from './helpers.js';
import { readAll } from '../../helpers/streams.js';

let db: Database;
let env: Env;
useFsEnv({ db: (d) => (db = d), env: (e) => (env = e) });

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('filesystemConnectorType', () => {
  const ctx = (options: Record<string, unknown>): ConnectorContext => ({
    sid: 'files',
    config: { type: 'filesystem', enabled: true, options },
    dataDir: env.dir,
    blobs: undefined as never,
    log: createLogger('silent'),
  });

  it('creates a relative root below the data directory and declares its capabilities', async () => {
    const connector = await filesystemConnectorType.create(ctx({ root: 'repo/files' }));
    expect((await stat(join(env.dir, 'repo', 'files'))).isDirectory()).toBe(true);
    expect(connector.type).toBe('filesystem');
    expect(connector.repository).toMatchObject({
      commands: ['copy', 'move', 'delete', 'import', 'preview'], contentDelete: false, contentWrite: true,
    });
    expect(connector.repository?.sync).toBeTypeOf('function');
  });

  it('refuses unknown options (there is no followSymlinks) and a missing root', async () => {
    await expect(Promise.resolve().then(() => filesystemConnectorType.create(ctx({ root: 'r', followSymlinks: true })))).rejects.toThrow();
    await expect(Promise.resolve().then(() => filesystemConnectorType.create(ctx({})))).rejects.toThrow();
  });
});

describe('create', () => {
  it('makes directories and empty files and returns the relative path', async () => {
    const docs = await createEntry(env, env.rootRow, 'docs', 'collection');
    const file = await createEntry(env, docs, 'a.pdf', 'document');
    expect(docs.path).toBe('docs');
    expect(file.path).toBe('docs/a.pdf');
    expect((await stat(join(env.root, 'docs'))).isDirectory()).toBe(true);
    expect((await stat(join(env.root, 'docs', 'a.pdf'))).size).toBe(0);
  });

  it('answers NAME_EXISTS for an existing name', async () => {
    await createEntry(env, env.rootRow, 'a', 'collection');
    expect(await errorCode(createEntry(env, env.rootRow, 'a', 'document'))).toBe('NAME_EXISTS');
    expect(await errorCode(createEntry(env, env.rootRow, 'a', 'collection'))).toBe('NAME_EXISTS');
  });

  it.each(['..', '../x', 'a/b', '/etc/passwd', 'a\\b', ''])('refuses the name %j', async (name) => {
    expect(await errorCode(createEntry(env, env.rootRow, name, 'document'))).toBe('INVALID_NAME');
  });

  it('creates %2e%2e as a literal name inside the root', async () => {
    const row = await createEntry(env, env.rootRow, '%2e%2e', 'document');
    expect(row.path).toBe('%2e%2e');
    expect(await readdir(env.root)).toEqual(['%2e%2e']);
  });
});

describe('writeContent / openContent / contentPath', () => {
  it('writes through a temp file, hashes, and reads back whole or by range', async () => {
    const doc = await createEntry(env, env.rootRow, 'a.txt', 'document');
    const written = await env.backend.writeContent(doc, body('hello world'), 0);
    expect(written).toEqual({ size: 11, sha256: sha('hello world'), path: 'a.txt' });
    expect(await readAll(await env.backend.openContent(doc))).toBe('hello world');
    expect(await readAll(await env.backend.openContent(doc, { start: 6, end: 10 }))).toBe('world');
    expect(await env.backend.contentPath(doc)).toBe(join(env.root, 'a.txt'));
    expect(await readdir(env.root)).toEqual(['a.txt']);
  });

  it('replaces existing content and streams large bodies', async () => {
    const doc = await createEntry(env, env.rootRow, 'big.bin', 'document');
    await env.backend.writeContent(doc, body('old'), 0);
    const chunk = Buffer.alloc(64 * 1024, 7);
    const source = Readable.from((function* () { for (let i = 0; i < 64; i++) yield chunk; })());
    const written = await env.backend.writeContent(doc, source, 0);
    expect(written.size).toBe(64 * 64 * 1024);
    expect((await stat(join(env.root, 'big.bin'))).size).toBe(written.size);
  });

  it('enforces maxBytes with 413, removes the temp file and keeps the old content', async () => {
    const doc = await createEntry(env, env.rootRow, 'a.txt', 'document');
    await env.backend.writeContent(doc, body('keep me'), 0);
    const err = await env.backend.writeContent(doc, body('x'.repeat(100)), 10).catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(await readdir(env.root)).toEqual(['a.txt']);
    expect(await readFile(join(env.root, 'a.txt'), 'utf8')).toBe('keep me');
  });

  it('recreates a vanished file on write; reads of missing files give undefined', async () => {
    const doc = fakeRow(env, 'gone.txt');
    expect(await env.backend.openContent(doc)).toBeUndefined();
    expect(await env.backend.contentPath(doc)).toBeUndefined();
    await env.backend.writeContent(doc, body('back'), 0);
    expect(await readFile(join(env.root, 'gone.txt'), 'utf8')).toBe('back');
  });

  it('has no content for collections', async () => {
    const dir = await createEntry(env, env.rootRow, 'd', 'collection');
    expect(await env.backend.openContent(dir)).toBeUndefined();
    expect(await errorCode(env.backend.writeContent(dir, body('x'), 0))).toBe('NOT_A_FILE');
  });
});

describe('rename / move', () => {
  it('renames files and directories and refuses existing names', async () => {
    const a = await createEntry(env, env.rootRow, 'a.txt', 'document');
    await createEntry(env, env.rootRow, 'b.txt', 'document');
    expect(await env.backend.rename(a, 'c.txt')).toEqual({ path: 'c.txt' });
    expect((await readdir(env.root)).sort()).toEqual(['b.txt', 'c.txt']);
    expect(await errorCode(env.backend.rename({ ...a, path: 'c.txt' }, 'b.txt'))).toBe('NAME_EXISTS');
    expect(await errorCode(env.backend.rename({ ...a, path: 'c.txt' }, '../x'))).toBe('INVALID_NAME');
    expect(await errorCode(env.backend.rename(env.rootRow, 'x'))).toBe('ROOT_PROTECTED');
  });

  it('moves into another collection; the caller rewrites descendant paths', async () => {
    const src = await createEntry(env, env.rootRow, 'src', 'collection');
    const inner = await createEntry(env, src, 'inner', 'collection');
    await createEntry(env, inner, 'f.txt', 'document');
    const dst = await createEntry(env, env.rootRow, 'dst', 'collection');
    const { path } = await env.backend.move(src, dst);
    expect(path).toBe('dst/src');
    await db.query('UPDATE entries SET parent = $2, path = $3 WHERE uuid = $1', [src.uuid, dst.uuid, path]);
    expect(await rewritePaths(db, env.sid, 'src', 'dst/src')).toBe(2);
    expect(await allPaths(env)).toEqual(['', 'dst', 'dst/src', 'dst/src/inner', 'dst/src/inner/f.txt']);
    expect(await readFile(join(env.root, 'dst', 'src', 'inner', 'f.txt'), 'utf8')).toBe('');
  });

  it('refuses moving a collection into itself or onto an existing name', async () => {
    const a = await createEntry(env, env.rootRow, 'a', 'collection');
    const sub = await createEntry(env, a, 'sub', 'collection');
    const b = await createEntry(env, env.rootRow, 'b', 'collection');
    await createEntry(env, b, 'a', 'document');
    expect(await errorCode(env.backend.move(a, a))).toBe('MOVE_INTO_SELF');
    expect(await errorCode(env.backend.move(a, sub))).toBe('MOVE_INTO_SELF');
    expect(await errorCode(env.backend.move(a, b))).toBe('NAME_EXISTS');
    expect(await errorCode(env.backend.move(a, fakeRow(env, '../outside', 'collection')))).toBe('PATH_ESCAPE');
  });
});

describe('copy / remove', () => {
  it('copies a document without overwriting', async () => {
    const a = await createEntry(env, env.rootRow, 'a.txt', 'document');
    await env.backend.writeContent(a, body('payload'), 0);
    const d = await createEntry(env, env.rootRow, 'd', 'collection');
    expect(await env.backend.copy(a, d, 'copy.txt')).toEqual({ path: 'd/copy.txt' });
    expect(await readFile(join(env.root, 'd', 'copy.txt'), 'utf8')).toBe('payload');
    // same mtime as the source, so the copied row's content version stays valid
    expect(fingerprint(await stat(join(env.root, 'd', 'copy.txt')))).toBe(fingerprint(await stat(join(env.root, 'a.txt'))));
    expect(await errorCode(env.backend.copy(a, d, 'copy.txt'))).toBe('NAME_EXISTS');
    expect(await errorCode(env.backend.copy(d, env.rootRow, 'd2'))).toBe('NOT_A_FILE');
    expect(await errorCode(env.backend.copy(a, d, '..'))).toBe('INVALID_NAME');
  });

  it('removes files and whole directories, never the root; a vanished entry is fine', async () => {
    const d = await createEntry(env, env.rootRow, 'd', 'collection');
    await createEntry(env, d, 'f.txt', 'document');
    const f = await createEntry(env, env.rootRow, 'g.txt', 'document');
    await env.backend.remove(d);
    await env.backend.remove(f);
    expect(await readdir(env.root)).toEqual([]);
    await env.backend.remove(f);
    await env.backend.remove(fakeRow(env, 'missing/deeper.txt'));
    expect(await errorCode(env.backend.remove(env.rootRow))).toBe('ROOT_PROTECTED');
    await mkdir(join(env.root, 'still-here'));
    expect(await readdir(env.root)).toEqual(['still-here']);
  });
});
