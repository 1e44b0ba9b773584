import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ListItem } from '../../../../../src/formats/index.js';
import { insertItemsFrom } from '../../../../../src/areas/lists/store/bulk/insert-items.js';
import * as store from '../../../../../src/areas/lists/store/list-store.js';
import type { Database } from '../../../../../src/storage/driver/database.js';
import { bothDrivers } from '../../../../helpers/databases.js';
import { items, newUserList, useDatabase } from '../helpers.js';

/** Bulk imports on both drivers (COPY on PostgreSQL, multi-row INSERTs on PGlite): batches stream in the caller's transaction. */

async function* generate(n: number, failAt?: number): AsyncGenerator<ListItem> {
  for (let i = 0; i < n; i++) {
    if (i === failAt) throw new Error('bad row');
    yield { href: `/services/store/repo/${randomUUID()}`, metadata: { i: String(i), nested: { a: [i] } } };
  }
}

for (const [driver, open] of bothDrivers()) {
  describe(`bulk import on ${driver}`, () => {
    let db: Database;
    useDatabase(open, (d) => (db = d));
    const newList = (creator?: string) => newUserList(db, creator);

    it('batch-inserts a stream in chunks inside the caller transaction', async () => {
      const list = await newList();
      await store.appendItems(db, list.lid, items(2));
      const n = await db.transaction((tx) => insertItemsFrom(tx, list.lid, generate(5003), { chunkRows: 1000 }));
      expect(n).toBe(5003);
      expect((await store.getList(db, list.lid))!.item_count).toBe(5005);
      const exported: number[] = [];
      for await (const row of store.exportItems(db, list.lid, 700)) exported.push(row.position);
      expect(exported).toEqual(Array.from({ length: 5005 }, (_, i) => i));
      const last = await store.pageItems(db, list.lid, { offset: 5004, limit: 1, sort: [] });
      expect(last[0]!.metadata).toEqual({ i: '5002', nested: { a: [5002] } });
      expect(last[0]!.doc_sid).toBe('store');
    });

    it('a streamed import keeps every character of hrefs and metadata (COPY binary on PostgreSQL)', async () => {
      const list = await newList();
      const uuid = '0B1C2D3E-0000-4000-8000-00000000000A';
      const odd: ListItem[] = [
        { href: `/v1/services/st%C3%B6re/repo/${uuid}`, metadata: { t: 'tab\there', n: 'line\nbreak\r\n', b: 'back\\slash \\N', q: '"quoted", \'single\'' } },
        { href: 'https://example.com/a\tb?x=1&y=ü', metadata: { emoji: '😀 ünïcödé 中文', empty: '', deep: { a: { b: ['x', 1, null, true] } } } },
        { href: `/services/${'s'.repeat(300)}/repo/${randomUUID()}`, metadata: {} },
      ];
      async function* stream() {
        yield* odd;
      }
      expect(await db.transaction((tx) => insertItemsFrom(tx, list.lid.toUpperCase(), stream()))).toBe(3);
      const rows = await store.pageItems(db, list.lid, { offset: 0, limit: 10, sort: [] });
      expect(rows.map((r) => ({ href: r.href, metadata: r.metadata }))).toEqual(odd);
      expect(rows.map((r) => r.position)).toEqual([0, 1, 2]);
      expect(rows[0]).toMatchObject({ lid: list.lid, doc_sid: 'störe', doc_uuid: uuid.toLowerCase() });
      expect(rows[1]).toMatchObject({ doc_sid: null, doc_uuid: null });
      expect(rows[2]!.doc_sid).toBe('s'.repeat(300));
      for (const r of rows) expect(r.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(new Set(rows.map((r) => r.id)).size).toBe(3);
    });

    it('a failing stream leaves nothing behind', async () => {
      const list = await newList();
      await expect(db.transaction(async (tx) => {
        const created = await store.createList(tx, { kind: 'user', creator: 'ann' });
        await insertItemsFrom(tx, created.lid, generate(3000, 2500), { chunkRows: 1000 });
      })).rejects.toThrow('bad row');
      await expect(db.transaction((tx) => insertItemsFrom(tx, list.lid, generate(3000, 2999), { chunkRows: 1000 }))).rejects.toThrow('bad row');
      expect(await store.countItems(db, list.lid)).toBe(0);
      expect((await store.getList(db, list.lid))!.item_count).toBe(0);
    });

    it('refuses a list that does not exist', async () => {
      await expect(db.transaction((tx) => insertItemsFrom(tx, randomUUID(), generate(1)))).rejects.toMatchObject({ code: 'LIST_NOT_FOUND' });
    });
  });
}
