import { mkdir, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fingerprint, guessMimeType } from '../../../src/connectors/filesystem/filesystem-sync.js';
import type { EntryRow } from '../../../src/connectors/connector.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { allPaths, body, childRows, createEntry, errorCode, sync, type Env, useFsEnv } from './helpers.js';

let db: Database;
let env: Env;
useFsEnv({ db: (d) => (db = d), env: (e) => (env = e) });

const refresh = (entry: EntryRow) => env.refresh(entry);
const byName = async (parent: EntryRow | string) => new Map((await childRows(env, parent)).map((r) => [r.name, r]));

describe('guessMimeType', () => {
  it('maps known extensions case-insensitively', () => {
    expect(guessMimeType('a.PDF')).toBe('application/pdf');
    expect(guessMimeType('list.rli')).toBe('application/rli');
    expect(guessMimeType('scan.tif')).toBe('image/tiff');
    expect(guessMimeType('noext')).toBe('application/octet-stream');
  });
});

describe('sync', () => {
  it('inserts rows for files and directories found on disk', async () => {
    await writeFile(join(env.root, 'a.pdf'), '12345');
    await mkdir(join(env.root, 'sub'));
    await writeFile(join(env.root, 'sub', 'deep.txt'), 'x');
    await sync(env, env.rootRow);
    const rows = await byName(env.rootRow);
    expect([...rows.keys()].sort()).toEqual(['a.pdf', 'sub']);
    const st = await stat(join(env.root, 'a.pdf'));
    expect(rows.get('a.pdf')).toMatchObject({
      sid: env.sid, parent: env.rootRow.uuid, type: 'document', path: 'a.pdf', size: 5,
      mime_type: 'application/pdf', content_version: fingerprint(st), sha256: null,
    });
    expect(rows.get('a.pdf')!.modified.getTime()).toBe(Math.floor(st.mtimeMs));
    expect(rows.get('sub')).toMatchObject({ type: 'collection', path: 'sub', size: null, content_version: null });
    // not recursive: the grandchild waits for a listing of sub
    expect(await allPaths(env)).toEqual(['', 'a.pdf', 'sub']);
    await sync(env, rows.get('sub')!);
    expect(await allPaths(env)).toEqual(['', 'a.pdf', 'sub', 'sub/deep.txt']);
  });

  it('descends when recursive and is idempotent', async () => {
    await mkdir(join(env.root, 'a', 'b', 'c'), { recursive: true });
    await writeFile(join(env.root, 'a', 'b', 'c', 'f.txt'), 'f');
    await sync(env, env.rootRow, true);
    const first = await db.query('SELECT uuid, path, modified FROM entries WHERE sid = $1 ORDER BY uuid', [env.sid]);
    expect(first.rows.map((r) => r.path).sort()).toEqual(['', 'a', 'a/b', 'a/b/c', 'a/b/c/f.txt']);
    await sync(env, env.rootRow, true);
    const second = await db.query('SELECT uuid, path, modified FROM entries WHERE sid = $1 ORDER BY uuid', [env.sid]);
    expect(second.rows).toEqual(first.rows);
  });

  it('skips symlinks, temp files, special names and never follows linked directories', async () => {
    await writeFile(join(env.outside, 'secret.txt'), 'secret');
    await symlink(join(env.outside, 'secret.txt'), join(env.root, 'file-link'));
    await symlink(env.outside, join(env.root, 'dir-link'));
    await symlink(join(env.root, 'nowhere'), join(env.root, 'dangling'));
    await writeFile(join(env.root, '.wcr-0b6f8f0e-8a4c-4f7e-9a59-6f0b3d2f4f11.part'), 'partial');
    await writeFile(join(env.root, 'line\nbreak'), 'x');
    await writeFile(join(env.root, '%2e%2e'), 'literal');
    await sync(env, env.rootRow, true);
    expect(await allPaths(env)).toEqual(['', '%2e%2e']);
  });

  it('deletes rows of vanished files and directories with their descendants', async () => {
    await mkdir(join(env.root, 'd', 'e'), { recursive: true });
    await writeFile(join(env.root, 'd', 'e', 'f.txt'), 'f');
    await writeFile(join(env.root, 'g.txt'), 'g');
    await sync(env, env.rootRow, true);
    await rm(join(env.root, 'd'), { recursive: true });
    await rm(join(env.root, 'g.txt'));
    await sync(env, env.rootRow);
    expect(await allPaths(env)).toEqual(['']);
  });

  it('replaces a row whose file became a directory', async () => {
    await writeFile(join(env.root, 'x'), 'file');
    await sync(env, env.rootRow);
    const before = (await byName(env.rootRow)).get('x')!;
    await rm(join(env.root, 'x'));
    await mkdir(join(env.root, 'x'));
    await sync(env, env.rootRow);
    const after = (await byName(env.rootRow)).get('x')!;
    expect(after.type).toBe('collection');
    expect(after.uuid).not.toBe(before.uuid);
  });

  it('records outside changes and leaves content written through the API alone', async () => {
    const doc = await createEntry(env, env.rootRow, 'a.txt', 'document');
    const written = await env.backend.writeContent(doc, body('through the api'), 0);
    // what the service does after writeContent resolves (modified taken after the write)
    await db.query('UPDATE entries SET size = $2, sha256 = $3, content_version = $3, modified = $4 WHERE uuid = $1',
      [doc.uuid, written.size, written.sha256, new Date()]);
    await sync(env, env.rootRow);
    expect((await byName(env.rootRow)).get('a.txt')).toMatchObject({ sha256: written.sha256, content_version: written.sha256 });

    // same size, newer mtime: an edit outside the API
    await writeFile(join(env.root, 'a.txt'), 'THROUGH THE API');
    const later = new Date(Date.now() + 10_000);
    await utimes(join(env.root, 'a.txt'), later, later);
    await sync(env, env.rootRow);
    const row = (await byName(env.rootRow)).get('a.txt')!;
    expect(row).toMatchObject({ sha256: null, size: 15, content_version: fingerprint(await stat(join(env.root, 'a.txt'))) });

    // a fingerprint row changes on any mtime change, even to an older time
    const earlier = new Date(Date.now() - 86_400_000);
    await utimes(join(env.root, 'a.txt'), earlier, earlier);
    await sync(env, env.rootRow);
    const older = (await byName(env.rootRow)).get('a.txt')!;
    expect(older.content_version).toBe(fingerprint(await stat(join(env.root, 'a.txt'))));
    expect(older.content_version).not.toBe(row.content_version);
  });

  it('handles directories larger than one insert batch', async () => {
    await mkdir(join(env.root, 'many'));
    const names = Array.from({ length: 5_200 }, (_, i) => `f${String(i).padStart(5, '0')}.txt`);
    for (let i = 0; i < names.length; i += 200) {
      await Promise.all(names.slice(i, i + 200).map((n) => writeFile(join(env.root, 'many', n), n)));
    }
    await sync(env, env.rootRow, true);
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM entries WHERE sid = $1 AND type = 'document'`, [env.sid]);
    expect(rows[0]!.n).toBe(5_200);
    await rm(join(env.root, 'many', names[0]!));
    await sync(env, (await byName(env.rootRow)).get('many')!);
    const again = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM entries WHERE sid = $1 AND type = 'document'`, [env.sid]);
    expect(again.rows[0]!.n).toBe(5_199);
  });

  it('answers 503 instead of dropping every row when the root is gone', async () => {
    await writeFile(join(env.root, 'a.txt'), 'a');
    await sync(env, env.rootRow);
    await rm(env.root, { recursive: true });
    expect(await errorCode(sync(env, env.rootRow))).toBe('ROOT_UNAVAILABLE');
    expect(await errorCode(refresh(env.rootRow))).toBe('ROOT_UNAVAILABLE');
    expect(await allPaths(env)).toEqual(['', 'a.txt']);
  });
});

describe('refresh', () => {
  it('returns the row unchanged, updated, or undefined when the file is gone', async () => {
    const doc = await createEntry(env, env.rootRow, 'a.txt', 'document');
    await sync(env, env.rootRow);
    const current = (await byName(env.rootRow)).get('a.txt')!;
    expect(await refresh(current)).toEqual(current);

    await writeFile(join(env.root, 'a.txt'), 'grown');
    const updated = await refresh(current);
    expect(updated).toMatchObject({ uuid: doc.uuid, size: 5, sha256: null });
    expect(updated!.content_version).toBe(fingerprint(await stat(join(env.root, 'a.txt'))));

    await rm(join(env.root, 'a.txt'));
    expect(await refresh(updated!)).toBeUndefined();
    expect(await allPaths(env)).toEqual(['']);
  });

  it('drops a row whose file became a symlink or changed type', async () => {
    const a = await createEntry(env, env.rootRow, 'a.txt', 'document');
    const d = await createEntry(env, env.rootRow, 'd', 'collection');
    await rm(join(env.root, 'a.txt'));
    await symlink(join(env.outside), join(env.root, 'a.txt'));
    await rm(join(env.root, 'd'), { recursive: true });
    await writeFile(join(env.root, 'd'), 'now a file');
    expect(await refresh(a)).toBeUndefined();
    expect(await refresh(d)).toBeUndefined();
    expect(await allPaths(env)).toEqual(['']);
  });
});
