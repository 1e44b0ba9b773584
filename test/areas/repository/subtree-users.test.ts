import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEntryWithUsers, lockSubtree } from '../../../src/areas/repository/entry-store.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { bothDrivers, type TestDatabase } from '../../helpers/databases.js';

/**
 * The subtree statements of a delete: `lockSubtree` (with the tasks using the
 * subtree, for the delete command's in-use rule) and `getEntryWithUsers` (a
 * launch's entry and its users in one query), on both drivers.
 */
for (const [name, open] of bothDrivers()) {
  describe(`subtree statements on ${name}`, () => {
    let t: TestDatabase;
    let db: Database;
    const root = randomUUID();
    const folder = randomUUID();
    const inner = randomUUID();
    const sub = randomUUID();
    const deep = randomUUID();
    const lone = randomUUID();
    const tid = randomUUID();

    const entry = (uuid: string, parent: string | null, entryName: string, type: 'document' | 'collection') =>
      db.query(`INSERT INTO entries (uuid, sid, parent, name, type) VALUES ($1, 'store', $2, $3, $4)`, [uuid, parent, entryName, type]);

    beforeAll(async () => {
      t = await open();
      db = t.db;
      await entry(root, null, '', 'collection');
      await entry(folder, root, 'folder', 'collection');
      await entry(inner, folder, 'inner.pdf', 'document');
      await entry(sub, folder, 'sub', 'collection');
      await entry(deep, sub, 'deep.pdf', 'document');
      await entry(lone, root, 'lone.pdf', 'document');
      // a processing task whose input list uses `deep`
      await db.query(`INSERT INTO tasks (tid, sid, name, status, creator) VALUES ($1, 'store', 'run', 'processing', 'u')`, [tid]);
      const lid = randomUUID();
      await db.query(`INSERT INTO lists (lid, kind, tid) VALUES ($1, 'input', $2)`, [lid, tid]);
      await db.query(`INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid) VALUES ($1, $2, 0, 'x', 'store', $3)`, [randomUUID(), lid, deep]);
    });
    afterAll(() => t?.drop());

    const users = [{ tid, sid: 'store', status: 'processing', href: `/v1/services/store/tasks/${tid}` }];

    it('lockSubtree locks a collection with everything below, a document alone, and reports users when asked', async () => {
      await db.transaction(async (tx) => {
        const all = await lockSubtree(tx, 'store', folder, { users: true });
        expect(all).toMatchObject({ root: { uuid: folder, name: 'folder', parent: root }, size: 4, users });
        expect(all!.root).not.toHaveProperty('users');
        expect(await lockSubtree(tx, 'store', lone, { users: true })).toMatchObject({ root: { uuid: lone }, size: 1, users: [] });
        const plain = await lockSubtree(tx, 'store', sub);
        expect(plain).toMatchObject({ root: { uuid: sub, name: 'sub' }, size: 2 });
        expect(plain).not.toHaveProperty('users');
        expect(await lockSubtree(tx, 'store', randomUUID(), { users: true })).toBeUndefined();
        expect(await lockSubtree(tx, 'other', folder)).toBeUndefined();
      });
    });

    it('getEntryWithUsers: the entry with the tasks using it or anything below it; none looked up for the root', async () => {
      expect(await getEntryWithUsers(db, 'store', folder)).toMatchObject({ entry: { uuid: folder, type: 'collection' }, users });
      expect(await getEntryWithUsers(db, 'store', deep)).toMatchObject({ entry: { uuid: deep, parent: sub }, users });
      expect(await getEntryWithUsers(db, 'store', inner)).toMatchObject({ entry: { uuid: inner }, users: [] });
      const top = await getEntryWithUsers(db, 'store', root);
      expect(top).toMatchObject({ entry: { uuid: root, parent: null }, users: [] });
      expect(top!.entry).not.toHaveProperty('users');
      expect(await getEntryWithUsers(db, 'store', randomUUID())).toBeUndefined();
      await db.query(`UPDATE tasks SET status = 'completed' WHERE tid = $1`, [tid]);
      expect((await getEntryWithUsers(db, 'store', folder))!.users).toEqual([]);
      await db.query(`UPDATE tasks SET status = 'processing' WHERE tid = $1`, [tid]);
    });
  });
}
