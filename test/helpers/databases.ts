import pg from 'pg';
import type { Database, Sql } from '../../src/storage/driver/database.js';
import { openPglite } from '../../src/storage/driver/pglite.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { TEST_DATABASE_URL, uniqueName } from './env.js';

/** A database of a test's own, and how to get rid of it. */
export interface TestDatabase {
  db: Database;
  /** Closes it and drops its schema (PostgreSQL) or its in-memory instance (PGlite). */
  drop(): Promise<void>;
}

export interface TestDatabaseOptions {
  /** Apply the product's migrations (default true). */
  migrate?: boolean;
  /** Pool size on PostgreSQL (default 4). */
  poolSize?: number;
}

/** Drops a PostgreSQL schema over a connection of its own. */
export async function dropSchema(schema: string): Promise<void> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await c.end();
  }
}

/**
 * How many rows `from` holds: a table name, optionally with a condition
 * (`"commands WHERE sid = $1"`, with `params`).
 */
export async function countRows(sql: Sql, from: string, params: readonly unknown[] = []): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${from}`, params);
  return rows[0]!.n;
}

/** A new schema on the test PostgreSQL server. */
export async function openTestPostgres(opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const schema = uniqueName('db');
  const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: opts.poolSize ?? 4 });
  if (opts.migrate ?? true) await migrate(db);
  return { db, drop: async () => { await db.close(); await dropSchema(schema); } };
}

/** An embedded PGlite in memory. */
export async function openTestPglite(opts: TestDatabaseOptions = {}): Promise<TestDatabase> {
  const db = await openPglite({ schema: 'wcr' });
  if (opts.migrate ?? true) await migrate(db);
  return { db, drop: () => db.close() };
}

/** Both drivers, for suites that must hold on each: `for (const [name, open] of bothDrivers()) describe(name, ...)`. */
export const bothDrivers = (opts: TestDatabaseOptions = {}): [string, () => Promise<TestDatabase>][] => [
  ['postgres', () => openTestPostgres(opts)],
  ['pglite', () => openTestPglite(opts)],
];
