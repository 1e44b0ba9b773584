import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/driver/database.js';
import { migrate } from '../../src/storage/migrate.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import * as entries from '../../src/areas/repository/entry-store.js';
import { parseListQuery } from '../../src/query/list-query.js';
import pg from 'pg';
import { bothDrivers, dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';

/** One storage suite, run against both drivers: PostgreSQL server and embedded PGlite. */
const drivers = bothDrivers({ migrate: false, poolSize: 4 });

for (const [name, open] of drivers) {
  describe(`storage on ${name}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    let root: string;
    beforeAll(async () => {
      ({ db, drop } = await open());
      expect(await migrate(db)).toEqual(MIGRATIONS.map((m) => m.id));
      root = (await entries.ensureRoot(db, 'svc', null)).uuid;
    });
    afterAll(() => drop());

    it('migrations apply once', async () => {
      expect(await migrate(db)).toEqual([]);
      const { rows } = await db.query<{ id: number }>('SELECT id FROM schema_migrations');
      expect(rows.map((r) => r.id).sort((a, b) => a - b)).toEqual(MIGRATIONS.map((m) => m.id));
    });

    it('sessions write timestamps as ISO text in UTC, whatever the server defaults to', async () => {
      const { rows } = await db.query<{ style: string; zone: string; text: string }>(
        `SELECT current_setting('DateStyle') AS style, current_setting('TimeZone') AS zone, '2026-11-23T04:00:00.5Z'::timestamptz::text AS text`);
      expect(rows[0]!.style).toMatch(/^ISO,/);
      expect(rows[0]!.zone).toBe('UTC');
      expect(rows[0]!.text).toBe('2026-11-23 04:00:00.5+00');
    });

    it('the root collection is created once, with a stable id', async () => {
      const again = await entries.ensureRoot(db, 'svc', null);
      expect(again.uuid).toBe(root);
      expect(entries.rootUuid('svc')).toBe(root);
    });

    it('inserts, reads back types faithfully, sorts and filters with bound parameters', async () => {
      for (let i = 0; i < 5; i++) {
        await entries.insertEntry(db, {
          uuid: randomUUID(), sid: 'svc', parent: root, name: `e${i}`, type: 'document', creator: 'u', owner: null,
          metadata: { n: i * 5, tag: i % 2 ? 'odd' : 'even', quote: "it's" },
          content: { size: 2 ** 40 + i, mimeType: 'application/pdf', sha256: 'a'.repeat(64), version: `v${i}` },
        });
      }
      const q = (query: Record<string, string>) => entries.listEntries(db, 'svc', { parent: root }, parseListQuery(query, []));
      const all = await q({ sort: '-metadata.n' });
      expect(all.map((e) => e.name)).toEqual(['e4', 'e3', 'e2', 'e1', 'e0']);
      expect(all[0]!.size).toBe(2 ** 40 + 4);
      expect(all[0]!.created).toBeInstanceOf(Date);
      expect(all[0]!.metadata).toEqual({ n: 20, tag: 'even', quote: "it's" });
      expect((await q({ tag: 'odd' })).map((e) => e.name)).toEqual(['e1', 'e3']);
      expect((await q({ 'metadata.quote': "it's" }))).toHaveLength(5);
      expect((await q({ name: '/^E[13]$/i' })).map((e) => e.name)).toEqual(['e1', 'e3']);
      expect((await q({ name: "e1' OR '1'='1" }))).toHaveLength(0);
      expect((await q({ limit: '2', offset: '3' })).map((e) => e.name)).toEqual(['e3', 'e4']);
    });

    it('names are unique per collection (23505 from both drivers)', async () => {
      const row = { uuid: randomUUID(), sid: 'svc', parent: root, name: 'e0', type: 'document' as const, creator: null, owner: null, metadata: {} };
      await expect(entries.insertEntry(db, row)).rejects.toMatchObject({ code: '23505' });
    });

    it('transactions roll back on error', async () => {
      const uuid = randomUUID();
      await expect(db.transaction(async (tx) => {
        await entries.insertEntry(tx, { uuid, sid: 'svc', parent: root, name: 'rolled-back', type: 'document', creator: null, owner: null, metadata: {} });
        throw new Error('boom');
      })).rejects.toThrow('boom');
      expect(await entries.getEntry(db, 'svc', uuid)).toBeUndefined();
    });

    it('documents in use by processing tasks', async () => {
      const doc = (await entries.listEntries(db, 'svc', { parent: root }, parseListQuery({ name: 'e2' }, [])))[0]!;
      const tid = randomUUID();
      const lid = randomUUID();
      await db.query(`INSERT INTO tasks (tid, sid, name, status) VALUES ($1, 'svc', 't', 'processing')`, [tid]);
      await db.query(`INSERT INTO lists (lid, kind, tid) VALUES ($1, 'input', $2)`, [lid, tid]);
      await db.query(`INSERT INTO list_items (id, lid, position, href, doc_uuid) VALUES ($1, $2, 0, 'h', $3)`, [randomUUID(), lid, doc.uuid]);
      expect(await entries.activeTasksUsing(db, [doc.uuid])).toEqual([{ tid, sid: 'svc', status: 'processing', href: `/v1/services/svc/tasks/${tid}` }]);
      const other = randomUUID();
      expect(await entries.inactiveOf(db, [doc.uuid, other])).toEqual([other]);
      await expect(db.query(`UPDATE tasks SET status = 'exploded' WHERE tid = $1`, [tid])).rejects.toMatchObject({ code: '23514' });
    });
  });
}

describe('postgres sessions under a role whose defaults differ', () => {
  it('still write timestamps as ISO text in UTC (the listing and the driver\'s parser read that text)', async () => {
    const role = uniqueName('role').replace(/[^a-z0-9_]/gi, '_').toLowerCase();
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    const dbName = (await admin.query<{ db: string }>('SELECT current_database() AS db')).rows[0]!.db;
    await admin.query(`CREATE ROLE "${role}" LOGIN`);
    await admin.query(`ALTER ROLE "${role}" SET DateStyle = 'SQL, DMY'`);
    await admin.query(`ALTER ROLE "${role}" SET TimeZone = 'America/New_York'`);
    await admin.query(`GRANT CREATE ON DATABASE "${dbName}" TO "${role}"`);
    const url = new URL(TEST_DATABASE_URL);
    url.username = role;
    url.password = '';
    const schema = uniqueName('db');
    try {
      const db = await openPostgres({ url: url.toString(), schema, poolSize: 1 });
      try {
        const { rows } = await db.query<{ text: string; at: Date }>(`SELECT '2026-11-23T04:00:00.5Z'::timestamptz::text AS text, '2026-11-23T04:00:00.5Z'::timestamptz AS at`);
        expect(rows[0]!.text).toBe('2026-11-23 04:00:00.5+00');
        expect(rows[0]!.at.toISOString()).toBe('2026-11-23T04:00:00.500Z');
      } finally {
        await db.close();
      }
    } finally {
      await dropSchema(schema);
      await admin.query(`REVOKE CREATE ON DATABASE "${dbName}" FROM "${role}"`);
      await admin.query(`DROP ROLE "${role}"`);
      await admin.end();
    }
  });
});
