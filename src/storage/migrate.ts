import type { Database, Sql } from './driver/database.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

// Any constant works; it only has to be the same for every process of this product.
const MIGRATION_LOCK = 727_001;
const LOCK_POLL_MS = 100;

/**
 * Applies pending migrations in order, each once, under a session advisory
 * lock held on one connection, so that several processes starting together
 * apply each migration once. A migration runs in a transaction together with
 * its bookkeeping row, unless it says `transaction: false` (e.g.
 * `CREATE INDEX CONCURRENTLY`): then it runs alone and is recorded after.
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.session(async (conn) => {
    await lock(conn);
    try {
      // Under the lock: two processes creating the table at once on a new schema
      // collide in the catalog (duplicate pg_type entry) even with IF NOT EXISTS.
      await conn.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        id integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`);
      const { rows } = await conn.query<{ id: number }>('SELECT id FROM schema_migrations');
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

async function record(conn: Sql, m: Migration): Promise<void> {
  await conn.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
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
