import { describe, expect, it } from 'vitest';
import { rewritePaths } from '../../../src/areas/repository/entry-store.js';
import { entryRows } from '../../../src/areas/repository/entry-rows.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { allPaths, childRows, insertRow, type Env, useFsEnv } from '../../connectors/filesystem/helpers.js';

/** Statements of the entry store that backends reach through the rows port, and path rewrites. */
let db: Database;
let env: Env;
useFsEnv({ db: (d) => (db = d), env: (e) => (env = e) });

describe('rewritePaths', () => {
  it('treats % and _ literally', async () => {
    for (const p of ['a_b', 'a_b/x', 'aXb', 'aXb/y', 'a_b2', 'a_b2/z', 'a%', 'a%/w']) {
      await insertRow(env, env.rootRow, p, 'document', p);
    }
    expect(await rewritePaths(db, env.sid, 'a_b', 'c')).toBe(1);
    expect(await rewritePaths(db, env.sid, 'a%', 'p')).toBe(1);
    expect(await allPaths(env)).toEqual(['', 'a%', 'aXb', 'aXb/y', 'a_b', 'a_b2', 'a_b2/z', 'c/x', 'p/w']);
  });

  it('refuses the root, which has no new path', async () => {
    await expect(rewritePaths(db, env.sid, '', 'x')).rejects.toThrow('the root has no new path');
  });
});

describe('entryRows (the EntryRowsPort)', () => {
  it('removes only rows that still have the name, type or path seen', async () => {
    const rows = entryRows(db, env.sid);
    const a = await insertRow(env, env.rootRow, 'a.txt', 'document', 'a.txt');
    const b = await insertRow(env, env.rootRow, 'b', 'collection', 'b');
    await rows.remove(env.rootRow.uuid, [{ ...a, name: 'renamed.txt' }, { ...b, type: 'document' }]);
    expect((await childRows(env, env.rootRow)).map((r) => r.name)).toEqual(['a.txt', 'b']);
    expect(await rows.removeAt(a.uuid, 'elsewhere.txt')).toBe(false);
    expect(await rows.removeAt(a.uuid, 'a.txt')).toBe(true);
    expect(await rows.get(a.uuid)).toBeUndefined();
  });

  it('adds found entries once, keeping a row another sync inserted under the same name', async () => {
    const rows = entryRows(db, env.sid);
    const when = new Date('2026-01-02T03:04:05.678Z');
    const found = { name: 'f.pdf', type: 'document' as const, path: 'f.pdf', size: 3, mimeType: 'application/pdf', contentVersion: 'm1-3', created: when, modified: when };
    await rows.add(env.rootRow.uuid, [found]);
    await rows.add(env.rootRow.uuid, [{ ...found, size: 4 }]);
    const [row] = await rows.children(env.rootRow.uuid);
    expect(row).toMatchObject({ name: 'f.pdf', type: 'document', size: 3, content_version: 'm1-3' });
    expect(row!.modified.getTime()).toBe(when.getTime());
    const [updated] = await rows.updateContent([{ uuid: row!.uuid, size: 9, modified: when, contentVersion: 'm2-9', mimeType: 'text/plain' }]);
    // the media type found first stays; the sha256 is unknown again
    expect(updated).toMatchObject({ size: 9, content_version: 'm2-9', mime_type: 'application/pdf', sha256: null });
  });
});
