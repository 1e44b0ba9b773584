import path from 'node:path';
import type { AppConfig } from '../config/schema.js';
import type { Database } from './driver/database.js';
import { openPostgres } from './driver/postgres.js';
import { openPglite } from './driver/pglite.js';
import { migrate } from './migrate.js';

/** PostgreSQL when `database.url` is set, else the embedded PGlite under DATA_DIR; migrated. */
export async function openDatabase(config: AppConfig): Promise<Database> {
  const { url, schema, poolSize } = config.database;
  const db = url
    ? await openPostgres({ url, schema, poolSize })
    : await openPglite({ dir: path.join(config.dataDir, 'pgdata'), schema });
  try {
    await migrate(db);
  } catch (err) {
    await db.close().catch(() => {});
    throw err;
  }
  return db;
}
