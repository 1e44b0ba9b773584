import type { Sql } from '../../../storage/driver/database.js';

/** The key/value object of /v3/configs/ (a null-prototype object: keys are user text). */
export async function readConfigs(sql: Sql): Promise<Record<string, unknown>> {
  const { rows } = await sql.query<{ key: string; value: unknown }>('SELECT key, value FROM print_configs ORDER BY key');
  const out = Object.create(null) as Record<string, unknown>;
  for (const r of rows) out[r.key] = r.value;
  return out;
}

export async function mergeConfigs(sql: Sql, entries: [string, unknown][]): Promise<void> {
  if (entries.length === 0) return;
  await sql.query(
    `INSERT INTO print_configs (key, value) SELECT k, v FROM unnest($1::text[], $2::jsonb[]) AS t(k, v)
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated = now()`,
    [entries.map(([k]) => k), entries.map(([, v]) => JSON.stringify(v))]);
}

export async function deleteConfigs(sql: Sql, keys: string[]): Promise<number> {
  const { rowCount } = await sql.query('DELETE FROM print_configs WHERE key = ANY($1::text[])', [keys]);
  return rowCount;
}
