import { describe, expect, it } from 'vitest';
import pg from 'pg';
import type { Database } from '../../src/storage/driver/database.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { openPglite } from '../../src/storage/driver/pglite.js';
import { migrate } from '../../src/storage/migrate.js';
import { MIGRATIONS, type Migration } from '../../src/storage/migrations/index.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';

/** Migrations that declare `transaction: false`, on both drivers. */
const concurrently: Migration = {
  id: 900, name: 'entries-name-index', transaction: false,
  sql: 'CREATE INDEX CONCURRENTLY entries_name_test_idx ON entries (name)',
};

const indexValid = async (db: Database) =>
  (await db.query<{ valid: boolean }>(
    `SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
     WHERE c.relname = 'entries_name_test_idx' AND c.relnamespace = to_regnamespace(current_schema())`)).rows;
const recorded = async (db: Database) => (await db.query<{ id: number }>('SELECT id FROM schema_migrations ORDER BY id')).rows.map((r) => r.id);

/**
 * A database of the test's own (not just a schema): CREATE INDEX CONCURRENTLY
 * waits for every older transaction in its database to end, and other test
 * files hold long ones in the shared test database (a 1,000-item task, a
 * held lock), which made these tests time out under load.
 */
async function withDatabase<T>(fn: (open: () => Promise<Database>) => Promise<T>): Promise<T> {
  const name = uniqueName('mg');
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name}"`);
    const url = new URL(TEST_DATABASE_URL);
    url.pathname = `/${name}`;
    try {
      return await fn(() => openPostgres({ url: url.toString(), schema: 'wcr', poolSize: 2 }));
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

describe('migrations outside a transaction', () => {
  it('PostgreSQL: CREATE INDEX CONCURRENTLY runs and is recorded once; inside a transaction it is refused and nothing is recorded', async () => {
    await withDatabase(async (open) => {
      const db = await open();
      try {
        const ids = MIGRATIONS.map((m) => m.id);
        // the same statement as an ordinary (transactional) migration: PostgreSQL refuses it, the bookkeeping rolls back
        await expect(migrate(db, [...MIGRATIONS, { ...concurrently, transaction: undefined }])).rejects.toThrow(/transaction block/);
        expect(await recorded(db)).toEqual(ids);
        expect(await indexValid(db)).toEqual([]);
        // the connection that failed went away with its session lock: the next run is not blocked
        expect(await migrate(db, [...MIGRATIONS, concurrently])).toEqual([900]);
        expect(await indexValid(db)).toEqual([{ valid: true }]);
        expect(await recorded(db)).toEqual([...ids, 900]);
        expect(await migrate(db, [...MIGRATIONS, concurrently])).toEqual([]);
      } finally {
        await db.close();
      }
    });
  });

  it('PostgreSQL: four processes starting together with a concurrent index: no deadlock, each migration applied once', async () => {
    await withDatabase(async (open) => {
      const dbs = await Promise.all(Array.from({ length: 4 }, open));
      try {
        // rows to index (each its own service root)
        await migrate(dbs[0]!);
        await dbs[0]!.query(`INSERT INTO entries (uuid, sid, name, type, creator, owner)
          SELECT gen_random_uuid(), 's' || g, 'n' || g, 'collection', 'u', 'u' FROM generate_series(1, 2000) g`);
        const results = await Promise.all(dbs.map((db) => migrate(db, [...MIGRATIONS, concurrently])));
        expect(results.map((r) => r.length).sort()).toEqual([0, 0, 0, 1]);
        expect(await indexValid(dbs[0]!)).toEqual([{ valid: true }]);
      } finally {
        for (const db of dbs) await db.close();
      }
    });
  }, 60_000);

  it('PGlite: the same migration runs outside a transaction and is recorded once', async () => {
    const db = await openPglite({ schema: 'wcr' });
    try {
      expect(await migrate(db, [...MIGRATIONS, concurrently])).toEqual([...MIGRATIONS.map((m) => m.id), 900]);
      expect(await indexValid(db)).toEqual([{ valid: true }]);
      expect(await migrate(db, [...MIGRATIONS, concurrently])).toEqual([]);
      // a transactional migration that fails leaves neither its changes nor its row
      await expect(migrate(db, [...MIGRATIONS, concurrently, { id: 901, name: 'broken', sql: 'CREATE TABLE half (a int); SELECT no_such_function()' }])).rejects.toThrow();
      expect(await recorded(db)).not.toContain(901);
      expect((await db.query(`SELECT to_regclass('half') AS t`)).rows).toEqual([{ t: null }]);
    } finally {
      await db.close();
    }
  }, 90_000); // three full migration runs in the WASM engine: 30 s and more on a loaded machine
});
