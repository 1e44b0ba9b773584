import type { Database } from './driver/database.js';
import { MIGRATIONS, type Migration } from './migrations/index.js';

// Any constant works; it only has to be the same for every process of this product.
const MIGRATION_LOCK = 727_001;

/**
 * Applies pending migrations in one transaction each, under an advisory lock so
 * that several processes starting together apply each migration once.
 */
export async function migrate(db: Database, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  const applied: number[] = [];
  await db.transaction(async (tx) => {
    // Lock first: two processes creating the table at once on a new schema would
    // collide in the catalog (duplicate pg_type entry) even with IF NOT EXISTS.
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await tx.query<{ id: number }>('SELECT id FROM schema_migrations');
    const done = new Set(rows.map((r) => r.id));
    for (const m of migrations) {
      if (done.has(m.id)) continue;
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (id, name) VALUES ($1, $2)', [m.id, m.name]);
      applied.push(m.id);
    }
  });
  return applied;
}
