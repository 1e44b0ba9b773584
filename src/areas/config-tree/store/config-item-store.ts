import { throwSqlError } from '../../../errors/sql-errors.js';
import type { Sql } from '../../../storage/driver/database.js';

/**
 * The one store of the `config_items` table (migration 022): the workflow
 * API's configuration tree. `path` is `COLLATE "C"`, so the items below "a/b"
 * are the byte range ["a/b/", "a/b0") ('0' follows '/'), one range scan of
 * the primary key; no LIKE, so `%` and `_` in a path are plain characters.
 * Paths come checked (`config-path.ts`); every statement is parameterized.
 */

export interface ConfigItemRow {
  path: string;
  value: unknown;
}

/** The range condition "strictly below `$n`" on `path`. */
const below = (n: number) => `(path >= $${n} || '/' COLLATE "C" AND path < $${n} || '0' COLLATE "C")`;

export async function getItem(sql: Sql, path: string): Promise<ConfigItemRow | undefined> {
  const { rows } = await sql.query<ConfigItemRow>('SELECT path, value FROM config_items WHERE path = $1', [path]);
  return rows[0];
}

/**
 * The paths of the items strictly below `path` (every item for `''`), in
 * byte order, a page at a time as they are read: a tree of any size is
 * never held in memory.
 */
export async function* keysBelow(sql: Sql, path: string, pageSize = 1000): AsyncGenerator<string> {
  let after: string | null = null;
  for (;;) {
    const params: unknown[] = [after, pageSize];
    let where = '($1::text IS NULL OR path > $1 COLLATE "C")';
    if (path !== '') {
      params.push(path);
      where += ` AND ${below(3)}`;
    }
    const { rows } = await sql.query<{ path: string }>(`SELECT path FROM config_items WHERE ${where} ORDER BY path LIMIT $2`, params);
    for (const row of rows) yield row.path;
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1]!.path;
  }
}

/** Creates or replaces the item at `path`. */
export async function putItem(sql: Sql, path: string, value: unknown, modifier: string): Promise<ConfigItemRow> {
  const { rows } = await sql.query<ConfigItemRow>(
    `INSERT INTO config_items (path, value, modifier) VALUES ($1, $2, $3)
     ON CONFLICT (path) DO UPDATE SET value = EXCLUDED.value, modifier = EXCLUDED.modifier, modified = now()
     RETURNING path, value`,
    [path, JSON.stringify(value), modifier],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** Deletes the item at `path` and every item below it; how many went. */
export async function deleteTree(sql: Sql, path: string): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM config_items WHERE path = $1 OR ${below(1)}`, [path]);
  return rowCount;
}
