import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ListFormat, parseList } from '../../src/formats/index.js';
import type { Database } from '../../src/storage/driver/database.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { chunked, format } from './helpers.js';

/**
 * The pattern docs/formats.md gives callers, on real PostgreSQL and the real
 * `lists` / `list_items` tables: items are inserted as they stream in, inside
 * one transaction, so a bad row late in the body leaves nothing behind.
 */
let db: Database;
const schema = uniqueName('fmt');
beforeAll(async () => {
  db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
  await migrate(db);
});
afterAll(async () => {
  await db.close();
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  await c.query(`DROP SCHEMA "${schema}" CASCADE`);
  await c.end();
});

async function importList(f: ListFormat, text: string): Promise<string> {
  const lid = randomUUID();
  const parsed = parseList(f, chunked(text));
  await db.transaction(async (tx) => {
    await tx.query(`INSERT INTO lists (lid, kind) VALUES ($1, 'user')`, [lid]);
    let position = 0;
    for await (const item of parsed.items) {
      await tx.query('INSERT INTO list_items (id, lid, position, href, metadata) VALUES ($1, $2, $3, $4, $5)', [randomUUID(), lid, position++, item.href, item.metadata]);
    }
    const { name, metadata } = parsed.header();
    // where a list's name is stored is the lists API's choice; this test keeps it in metadata
    await tx.query('UPDATE lists SET metadata = $2 WHERE lid = $1', [lid, { ...metadata, ...(name !== undefined ? { name } : {}) }]);
  });
  return lid;
}

const counts = async () => {
  const { rows } = await db.query<{ lists: string; items: string }>('SELECT (SELECT count(*) FROM lists) AS lists, (SELECT count(*) FROM list_items) AS items');
  return { lists: Number(rows[0]!.lists), items: Number(rows[0]!.items) };
};

const csvRows = (n: number) => Array.from({ length: n }, (_, i) => `/doc/${i},"n, ${i}"`).join('\r\n');

describe('nothing half-created', () => {
  it('a CSV whose row 401 is broken leaves no list and no items', async () => {
    const text = `item.href,item.metadata.name\r\n${csvRows(399)}\r\n/bad,"open\r\n${csvRows(100)}\r\n`;
    await expect(importList(format('csv'), text)).rejects.toMatchObject({ status: 400, code: 'INVALID_CSV', details: { row: 401, column: 'item.metadata.name' } });
    expect(await counts()).toEqual({ lists: 0, items: 0 });
  });

  it('an RList whose last section is broken leaves nothing', async () => {
    const docs = Array.from({ length: 300 }, (_, i) => `[DOCUMENT_${i + 1}]\r\nHREF="/doc/${i}"\r\n`).join('');
    await expect(importList(format('rlist'), `[JOBINFO]\r\nA=1\r\n${docs}[DOCUMENT_301]\r\nNAME=x\r\n`)).rejects.toMatchObject({ code: 'INVALID_RLIST', details: { section: 'DOCUMENT_301', key: 'HREF' } });
    expect(await counts()).toEqual({ lists: 0, items: 0 });
  });

  it('a good body is all there, in order, with its list values', async () => {
    const lid = await importList(format('csv'), `list.name,item.href,item.metadata.name\r\nL,/first,a\r\n${csvRows(500).split('\r\n').map((r) => `,${r}`).join('\r\n')}\r\n`);
    expect(await counts()).toEqual({ lists: 1, items: 501 });
    const { rows } = await db.query<{ href: string; metadata: unknown }>('SELECT href, metadata FROM list_items WHERE lid = $1 ORDER BY position LIMIT 2', [lid]);
    expect(rows).toEqual([{ href: '/first', metadata: { name: 'a' } }, { href: '/doc/0', metadata: { name: 'n, 0' } }]);
    const list = await db.query<{ metadata: unknown }>('SELECT metadata FROM lists WHERE lid = $1', [lid]);
    expect(list.rows[0]!.metadata).toEqual({ name: 'L' });
  });
});
