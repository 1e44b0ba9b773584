import { createHash } from 'node:crypto';
import type { Database, Sql } from './driver/database.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

// Any constant works; it only has to be the same for every process of this product.
const MIGRATION_LOCK = 727_001;
const LOCK_POLL_MS = 100;

/**
 * The checksum recorded with an applied migration: sha256 (hex) of its `sql`,
 * the exact text the database executes, any change of it (whitespace too)
 * counting. Not of the source file: the shipped build has compiled `.js`
 * without the `.ts`, and an edited comment or code around the SQL must not
 * stop a start. Hashing the text that runs also catches a migration whose
 * SQL is built from live code that later changed (why migrations are frozen
 * text). A template literal's line ends are LF whatever the checkout has, so
 * the text, and its hash, is the same on every platform. `transaction` is
 * left out: it changes how the SQL runs, not what it makes.
 */
export const migrationChecksum = (m: Pick<Migration, 'sql'>): string => createHash('sha256').update(m.sql, 'utf8').digest('hex');

/** A shipped migration was edited after this database applied it; the start must not go on. */
export class MigrationEditedError extends Error {
  constructor(readonly edited: readonly { id: number; name: string; recordedName: string }[]) {
    const which = edited.map((e) => `${e.id} (${e.name}${e.recordedName !== e.name ? `, recorded as ${e.recordedName}` : ''})`).join(', ');
    super(edited.length === 1
      ? `migration ${which} was edited after it was applied to this database: its SQL no longer matches the checksum recorded when it ran. `
        + 'Restore the migration\'s shipped text (src/storage/migrations/) and put the change in a new migration.'
      : `migrations ${which} were edited after they were applied to this database: their SQL no longer matches the checksums recorded when they ran. `
        + 'Restore their shipped text (src/storage/migrations/) and put the changes in new migrations.');
    this.name = 'MigrationEditedError';
  }
}

/**
 * Applies pending migrations in order, each once, under a session advisory
 * lock held on one connection, so that several processes starting together
 * apply each migration once. A migration runs in a transaction together with
 * its bookkeeping row, unless it says `transaction: false` (e.g.
 * `CREATE INDEX CONCURRENTLY`): then it runs alone and is recorded after.
 *
 * Each bookkeeping row keeps the migration's checksum (`migrationChecksum`).
 * Before anything is applied, every applied migration's checksum is compared
 * with the one of the migration as it is now: a difference throws
 * `MigrationEditedError` (the start fails) and changes nothing. Rows recorded
 * before checksums existed have none: they get the current one (trust on
 * first use; a migration edited before that start goes unnoticed).
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.session(async (conn) => {
    await lock(conn);
    try {
      // Under the lock: two processes creating the table at once on a new schema
      // collide in the catalog (duplicate pg_type entry) even with IF NOT EXISTS.
      // The table is the migrator's own, so its columns come from here, not from a
      // numbered migration; `checksum` came later, and older tables get it added.
      await conn.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        id integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now(), checksum text)`);
      await conn.query('ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text');
      const { rows } = await conn.query<{ id: number; name: string; checksum: string | null }>('SELECT id, name, checksum FROM schema_migrations');
      await verify(conn, migrations, rows);
      const done = new Set(rows.map((r) => r.id));
      const applied: number[] = [];
      for (const m of [...migrations].sort((a, b) => a.id - b.id)) {
        if (done.has(m.id)) continue;
        if (m.transaction === false) {
          await conn.exec(m.sql);
          await record(conn, m);
        } else {
          await inTransaction(conn, async () => {
            await conn.exec(m.sql);
            await record(conn, m);
          });
        }
        applied.push(m.id);
      }
      return applied;
    } finally {
      await conn.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  });
}

/**
 * Polls for the lock instead of blocking in `pg_advisory_lock`: a waiting
 * statement holds a snapshot, and `CREATE INDEX CONCURRENTLY` in the process
 * that has the lock waits for every older snapshot to end, so blocking
 * waiters would deadlock with it.
 */
async function lock(conn: Sql): Promise<void> {
  for (;;) {
    const { rows } = await conn.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [MIGRATION_LOCK]);
    if (rows[0]!.ok) return;
    await new Promise((resolve) => setTimeout(resolve, LOCK_POLL_MS));
  }
}

/**
 * Holds the applied migrations to their recorded checksums (all of them named
 * in one error), then records the missing ones (trust on first use). Rows of
 * ids no longer in `migrations` are left alone.
 */
async function verify(conn: Sql, migrations: readonly Migration[], rows: readonly { id: number; name: string; checksum: string | null }[]): Promise<void> {
  const byId = new Map(migrations.map((m) => [m.id, m]));
  const edited: { id: number; name: string; recordedName: string }[] = [];
  const unrecorded: Migration[] = [];
  for (const row of [...rows].sort((a, b) => a.id - b.id)) {
    const m = byId.get(row.id);
    if (!m) continue;
    if (row.checksum === null) unrecorded.push(m);
    else if (row.checksum !== migrationChecksum(m)) edited.push({ id: m.id, name: m.name, recordedName: row.name });
  }
  if (edited.length > 0) throw new MigrationEditedError(edited);
  for (const m of unrecorded) {
    await conn.query('UPDATE schema_migrations SET checksum = $2 WHERE id = $1 AND checksum IS NULL', [m.id, migrationChecksum(m)]);
  }
}

async function record(conn: Sql, m: Migration): Promise<void> {
  await conn.query('INSERT INTO schema_migrations (id, name, checksum) VALUES ($1, $2, $3)', [m.id, m.name, migrationChecksum(m)]);
}

async function inTransaction(conn: Sql, fn: () => Promise<void>): Promise<void> {
  await conn.exec('BEGIN');
  try {
    await fn();
    await conn.exec('COMMIT');
  } catch (err) {
    await conn.exec('ROLLBACK').catch(() => {});
    throw err;
  }
}
