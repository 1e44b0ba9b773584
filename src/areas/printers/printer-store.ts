import type { Sql } from '../../storage/driver/database.js';

/** A row of printers (migration 009 documents each column). */
export interface PrinterRow {
  name: string;
  connection: string;
  description: string | null;
  location: string | null;
  enabled: boolean;
  flow: string | null;
  paused: boolean;
  redirect: string | null;
  message: { text: string; user: string | null; date: string } | null;
  physical: Record<string, unknown> | null;
  error: { message: string; at: string } | null;
  last_printed: Date | null;
  creator: string | null;
  created: Date;
  updated: Date;
}

export async function getPrinter(sql: Sql, name: string, lock: 'share' | 'update' | false = false): Promise<PrinterRow | undefined> {
  const suffix = lock === 'share' ? ' FOR SHARE' : lock === 'update' ? ' FOR UPDATE' : '';
  const { rows } = await sql.query<PrinterRow>(`SELECT * FROM printers WHERE name = $1${suffix}`, [name]);
  return rows[0];
}

/** Every printer's redirect target (for loop checks). */
export async function redirectMap(sql: Sql): Promise<Map<string, string | null>> {
  const { rows } = await sql.query<{ name: string; redirect: string | null }>('SELECT name, redirect FROM printers WHERE redirect IS NOT NULL');
  return new Map(rows.map((r) => [r.name, r.redirect]));
}

/**
 * Where a job sent to `name` prints: the end of its redirect chain. Redirects
 * are refused when they would loop, so the chain ends; the bound is a guard.
 */
export async function resolveRedirect(sql: Sql, name: string): Promise<string> {
  const { rows } = await sql.query<{ name: string }>(
    `WITH RECURSIVE chain(name, redirect, depth) AS (
       SELECT name, redirect, 0 FROM printers WHERE name = $1
       UNION ALL
       SELECT p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64)
     SELECT name FROM chain ORDER BY depth DESC LIMIT 1`,
    [name],
  );
  return rows[0]?.name ?? name;
}
