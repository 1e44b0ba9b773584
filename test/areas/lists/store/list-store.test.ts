import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import * as store from '../../../../src/areas/lists/store/list-store.js';
import type { Database } from '../../../../src/storage/driver/database.js';
import { bothDrivers } from '../../../helpers/databases.js';
import { items, newUserList, useDatabase } from './helpers.js';

/** The list store on both drivers: positions stay dense, ids stay put. */

const hrefsOf = async (db: Database, lid: string) => (await store.pageItems(db, lid, { offset: 0, limit: 500, sort: [] })).map((r) => [r.position, r.href]);

for (const [driver, open] of bothDrivers()) {
  describe(`list store on ${driver}`, () => {
    let db: Database;
    useDatabase(open, (d) => (db = d));
    const newList = (creator?: string) => newUserList(db, creator);

    it('creates, reads, replaces, patches and deletes list metadata', async () => {
      const list = await newList();
      expect(list).toMatchObject({ kind: 'user', tid: null, name: 'L', metadata: { a: { b: '1' } }, creator: 'ann', item_count: 0 });
      expect(await store.getList(db, list.lid)).toMatchObject({ lid: list.lid });
      const patched = await db.transaction((tx) => store.patchList(tx, list.lid, { metadata: { a: { c: '2' }, d: 'x' } }));
      expect(patched!.metadata).toEqual({ a: { b: '1', c: '2' }, d: 'x' });
      expect(patched!.name).toBe('L');
      const replaced = await store.replaceList(db, list.lid, { name: 'M', metadata: { z: '1' } });
      expect(replaced).toMatchObject({ name: 'M', metadata: { z: '1' } });
      await store.appendItems(db, list.lid, items(3));
      expect(await store.deleteList(db, list.lid)).toBe(true);
      expect(await store.getList(db, list.lid)).toBeUndefined();
      expect(await store.countItems(db, list.lid)).toBe(0);
      expect(await store.deleteList(db, list.lid)).toBe(false);
      expect(await store.replaceList(db, randomUUID(), { metadata: {} })).toBeUndefined();
    });

    it('appends one or a batch at the end, and reads items by id', async () => {
      const list = await newList();
      const first = await store.appendItem(db, list.lid, { href: '/services/store/repo/0B1C2D3E-0000-4000-8000-000000000001', metadata: {} });
      expect(first).toMatchObject({ position: 0, doc_sid: 'store', doc_uuid: '0b1c2d3e-0000-4000-8000-000000000001' });
      const batch = await store.appendItems(db, list.lid, items(4, 1));
      expect(batch.map((r) => r.position)).toEqual([1, 2, 3, 4]);
      expect(batch[0]!.doc_uuid).toBeNull();
      expect(await store.getItem(db, list.lid, batch[2]!.id)).toMatchObject({ href: '/doc/3', metadata: { n: '3' } });
      expect(await store.getItem(db, randomUUID(), batch[2]!.id)).toBeUndefined();
      expect((await store.getList(db, list.lid))!.item_count).toBe(5);
      expect(await store.appendItems(db, randomUUID(), items(1))).toEqual([]);
    });

    it('concurrent appends never share a position', async () => {
      const list = await newList();
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.appendItems(db, list.lid, items(5, i * 5))));
      const positions = (await hrefsOf(db, list.lid)).map(([p]) => p);
      expect(positions).toEqual(Array.from({ length: 100 }, (_, i) => i));
    });

    it('delete keeps the other ids and closes the gap; a deleted id is gone for good', async () => {
      const list = await newList();
      const rows = await store.appendItems(db, list.lid, items(5));
      expect(await db.transaction((tx) => store.deleteItem(tx, list.lid, rows[1]!.id))).toBe(true);
      expect(await db.transaction((tx) => store.deleteItem(tx, list.lid, rows[1]!.id))).toBe(false);
      const after = await store.pageItems(db, list.lid, { offset: 0, limit: 10, sort: [] });
      expect(after.map((r) => [r.id, r.position])).toEqual([[rows[0]!.id, 0], [rows[2]!.id, 1], [rows[3]!.id, 2], [rows[4]!.id, 3]]);
      const next = await store.appendItem(db, list.lid, items(1, 9)[0]!);
      expect(next!.position).toBe(4);
      expect(next!.id).not.toBe(rows[1]!.id);
      expect(await store.countItems(db, list.lid)).toBe(5);
    });

    it('replace and patch an item; patch merges and may change only the href', async () => {
      const list = await newList();
      const [row] = await store.appendItems(db, list.lid, [{ href: '/a', metadata: { x: { y: '1' }, k: 'v' } }]);
      const patched = await db.transaction((tx) => store.patchItem(tx, list.lid, row!.id, { metadata: { x: { z: '2' } } }));
      expect(patched).toMatchObject({ href: '/a', metadata: { x: { y: '1', z: '2' }, k: 'v' } });
      const moved = await db.transaction((tx) => store.patchItem(tx, list.lid, row!.id, { href: '/b' }));
      expect(moved).toMatchObject({ href: '/b', metadata: { x: { y: '1', z: '2' }, k: 'v' } });
      const replaced = await store.replaceItem(db, list.lid, row!.id, { href: '/c', metadata: { only: '1' } });
      expect(replaced).toMatchObject({ id: row!.id, position: 0, href: '/c', metadata: { only: '1' } });
      expect(await store.replaceItem(db, list.lid, randomUUID(), { href: '/c', metadata: {} })).toBeUndefined();
    });

    it('reorders by indices: the placed items move, the rest keep their order', async () => {
      const list = await newList();
      const rows = await store.appendItems(db, list.lid, items(5));
      await db.transaction((tx) => store.reorderItems(tx, list.lid, [{ id: rows[4]!.id, index: 0 }, { id: rows[0]!.id, index: 2 }]));
      expect((await hrefsOf(db, list.lid)).map(([, h]) => h)).toEqual(['/doc/4', '/doc/1', '/doc/0', '/doc/2', '/doc/3']);
      for (const bad of [
        [{ id: rows[0]!.id, index: 5 }],
        [{ id: rows[0]!.id, index: 0 }, { id: rows[1]!.id, index: 0 }],
        [{ id: rows[0]!.id, index: 0 }, { id: rows[0]!.id, index: 1 }],
        [{ id: randomUUID(), index: 0 }],
      ]) {
        await expect(db.transaction((tx) => store.reorderItems(tx, list.lid, bad))).rejects.toMatchObject({ code: 'INVALID_REORDER' });
      }
      expect((await hrefsOf(db, list.lid)).map(([, h]) => h)).toEqual(['/doc/4', '/doc/1', '/doc/0', '/doc/2', '/doc/3']);
      expect(await db.transaction((tx) => store.reorderItems(tx, randomUUID(), []))).toBe(false);
    });

    it('pages with offset, limit, sort and metadata filters', async () => {
      const list = await newList();
      await store.appendItems(db, list.lid, items(12));
      const page = await store.pageItems(db, list.lid, { offset: 2, limit: 3, sort: [{ field: { path: ['href'] }, desc: true }] });
      expect(page.map((r) => r.href)).toEqual(['/doc/7', '/doc/6', '/doc/5']);
      const filtered = await store.pageItems(db, list.lid, { offset: 0, limit: 10, sort: [], filter: { op: 'cmp', field: { path: ['n'] }, cmp: 'eq', value: { type: 'text', value: '11' } } });
      expect(filtered.map((r) => r.position)).toEqual([11]);
    });

    it('reads the first items of several lists in one statement', async () => {
      const a = await newList();
      const b = await newList();
      const empty = await newList();
      await store.appendItems(db, a.lid, items(5));
      await store.appendItems(db, b.lid, items(2, 10));
      const first = await store.firstItemsOf(db, [a.lid, b.lid, empty.lid], 3);
      expect(first.get(a.lid)!.map((r) => r.href)).toEqual(['/doc/0', '/doc/1', '/doc/2']);
      expect(first.get(b.lid)!.map((r) => r.href)).toEqual(['/doc/10', '/doc/11']);
      expect(first.get(empty.lid)).toEqual([]);
      expect((await store.firstItemsOf(db, [], 3)).size).toBe(0);
    });

    it('lists per-user lists, limited to an owner', async () => {
      const mine = await newList('zed');
      const given = await store.createList(db, { kind: 'user', creator: 'other', owner: 'zed' });
      await store.createList(db, { kind: 'user', creator: 'other' });
      const owned = await store.listUserLists(db, { ownedBy: ['zed'] }, { offset: 0, limit: 100, sort: [] });
      // created in the same millisecond they tie on `created` and go by lid (random): compare as a set
      expect(owned.map((l) => l.lid).sort()).toEqual([mine.lid, given.lid].sort());
    });

    it('items must name an existing list; deleting a list deletes its items; a referenced lid cannot change (migration 010)', async () => {
      const insert = (lid: string) => db.query(
        `INSERT INTO list_items (id, lid, position, href) SELECT gen_random_uuid(), $1, g, '/doc' FROM generate_series(0, 2) g`, [lid]);
      await expect(insert(randomUUID())).rejects.toMatchObject({ code: '23503', constraint: 'list_items_lid_fkey' });
      const list = await newList();
      const other = await newList();
      await insert(list.lid);
      // one statement naming a list that exists and one that does not fails whole
      await expect(db.query(
        `INSERT INTO list_items (id, lid, position, href) VALUES (gen_random_uuid(), $1, 9, '/doc'), (gen_random_uuid(), $2, 0, '/doc')`,
        [list.lid, randomUUID()])).rejects.toMatchObject({ code: '23503' });
      expect(await store.countItems(db, list.lid)).toBe(3);
      // ... the missing one first or not
      await expect(db.query(
        `INSERT INTO list_items (id, lid, position, href) VALUES (gen_random_uuid(), $2, 0, '/doc'), (gen_random_uuid(), $1, 9, '/doc'), (gen_random_uuid(), $1, 10, '/doc')`,
        [list.lid, randomUUID()])).rejects.toMatchObject({ code: '23503', constraint: 'list_items_lid_fkey' });
      // two lists that exist in one statement are fine
      await db.query(
        `INSERT INTO list_items (id, lid, position, href) VALUES (gen_random_uuid(), $1, 3, '/doc'), (gen_random_uuid(), $2, 5, '/doc')`,
        [list.lid, other.lid]);
      await db.query('DELETE FROM list_items WHERE (lid = $1 AND position = 3) OR (lid = $2 AND position = 5)', [list.lid, other.lid]);
      expect(await store.countItems(db, list.lid)).toBe(3);
      expect(await store.countItems(db, other.lid)).toBe(0);
      await expect(db.query('UPDATE list_items SET lid = $2 WHERE lid = $1', [list.lid, randomUUID()])).rejects.toMatchObject({ code: '23503' });
      await db.query('UPDATE list_items SET lid = $2 WHERE lid = $1 AND position = 0', [list.lid, other.lid]);
      expect(await store.countItems(db, other.lid)).toBe(1);
      await expect(db.query('UPDATE lists SET lid = $2 WHERE lid = $1', [list.lid, randomUUID()])).rejects.toMatchObject({ code: '23503' });
      const empty = await newList();
      await db.query('UPDATE lists SET lid = $2 WHERE lid = $1', [empty.lid, randomUUID()]);
      expect(await store.deleteList(db, list.lid)).toBe(true);
      expect(await store.countItems(db, list.lid)).toBe(0);
      expect(await store.countItems(db, other.lid)).toBe(1);
    });

    it('finds the items naming a document through the document index', async () => {
      const list = await newList();
      const uuid = randomUUID();
      await store.appendItems(db, list.lid, [{ href: `/v1/services/store/repo/${uuid}`, metadata: {} }, ...items(3)]);
      const { rows } = await db.query<{ lid: string }>('SELECT lid FROM list_items WHERE doc_uuid = ANY($1::uuid[])', [[uuid, randomUUID()]]);
      expect(rows).toEqual([{ lid: list.lid }]);
    });
  });
}
