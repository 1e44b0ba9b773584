import { AppError } from '../../../errors/app-error.js';
import type { ODataQuery } from '../../../query/odata.js';
import { toSql } from '../../../query/to-sql.js';
import type { Sql } from '../../../storage/driver/database.js';
import { PRINTER_FIELDS } from './printer-fields.js';

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

/**
 * The printers' store: the only module that inserts, updates or deletes
 * rows of `printers`. The jobs store's outcome statements carry one of its
 * writes (`printedCte`) so that it costs no round trip of its own.
 */

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
    `WITH RECURSIVE ${redirectChain('(SELECT name, redirect FROM printers WHERE name = $1)')} SELECT name FROM ${CHAIN_END}`,
    [name],
  );
  return rows[0]?.name ?? name;
}

/**
 * The redirect chain from `start` (a row source with `name` and `redirect`)
 * as the CTE `chain(name, redirect, depth)`, for statements that resolve a
 * redirect themselves (WITH RECURSIVE); `CHAIN_END` is its last printer.
 */
export const redirectChain = (start: string): string => `chain(name, redirect, depth) AS (
       SELECT name, redirect, 0 FROM ${start} s
       UNION ALL
       SELECT p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64)`;
export const CHAIN_END = '(SELECT name FROM chain ORDER BY depth DESC LIMIT 1) chain_end';

/** A printer with its runtime (job in flight, waiting jobs), as listings and reads show it. */
export interface PrinterWithRuntime extends PrinterRow {
  current_job: string | null;
  queued_jobs: string;
}

const RUNTIME_COLUMNS = `p.*,
  (SELECT j.id FROM print_jobs j WHERE j.printer = p.name AND j.status = 'processing' ORDER BY j.updated LIMIT 1) AS current_job,
  (SELECT count(*) FROM print_jobs j WHERE j.printer = p.name AND j.status IN ('waitpreprocessing', 'preprocessing', 'waitprocessing', 'postponed')) AS queued_jobs`;

export async function getPrinterWithRuntime(sql: Sql, name: string): Promise<PrinterWithRuntime | undefined> {
  const { rows } = await sql.query<PrinterWithRuntime>(`SELECT ${RUNTIME_COLUMNS} FROM printers p WHERE p.name = $1`, [name]);
  return rows[0];
}

export async function listPrinters(sql: Sql, q: ODataQuery): Promise<{ rows: PrinterWithRuntime[]; total?: number }> {
  const params: unknown[] = [];
  const frag = toSql(q, PRINTER_FIELDS.map, params, 'p.name ASC');
  const cond = frag.where.length ? `WHERE ${frag.where.join(' AND ')}` : '';
  const countParams = [...params];
  params.push(q.top, q.skip);
  const { rows } = await sql.query<PrinterWithRuntime>(
    `SELECT ${RUNTIME_COLUMNS} FROM printers p ${cond} ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`, params);
  if (!q.inlineCount) return { rows };
  const c = await sql.query<{ n: string }>(`SELECT count(*) AS n FROM printers p ${cond}`, countParams);
  return { rows, total: Number(c.rows[0]!.n) };
}

export interface PrinterConfig {
  connection: string;
  description: string | null;
  location: string | null;
  enabled: boolean;
  flow: string | null;
}

export async function insertPrinter(sql: Sql, name: string, c: PrinterConfig, creator: string): Promise<PrinterRow> {
  const { rows } = await sql.query<PrinterRow>(
    `INSERT INTO printers (name, connection, description, location, enabled, flow, creator) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (name) DO NOTHING RETURNING *`,
    [name, c.connection, c.description, c.location, c.enabled, c.flow, creator]);
  if (!rows[0]) throw new AppError('PRINTER_EXISTS', `a printer named "${name}" exists`, { printer: name });
  return rows[0];
}

/** PUT: the configuration is replaced; runtime state (paused, redirect, message, device check) stays. */
export async function replacePrinter(sql: Sql, name: string, c: PrinterConfig): Promise<PrinterRow | undefined> {
  const { rows } = await sql.query<PrinterRow>(
    `UPDATE printers SET connection = $2, description = $3, location = $4, enabled = $5, flow = $6, updated = now(),
       physical = CASE WHEN connection = $2 THEN physical END, error = CASE WHEN connection = $2 THEN error END
     WHERE name = $1 RETURNING *`,
    [name, c.connection, c.description, c.location, c.enabled, c.flow]);
  return rows[0];
}

/** What keeps a printer from being deleted: jobs not finished on it, printers redirecting to it. */
export async function printerUsers(sql: Sql, name: string): Promise<{ jobs: number; redirectedFrom: string[] }> {
  const { rows } = await sql.query<{ jobs: string; redirected: string[] }>(
    `SELECT (SELECT count(*) FROM print_jobs WHERE printer = $1 AND status NOT IN ('processed', 'canceled', 'error')) AS jobs,
            ARRAY(SELECT name FROM printers WHERE redirect = $1 ORDER BY name) AS redirected`, [name]);
  return { jobs: Number(rows[0]!.jobs), redirectedFrom: rows[0]!.redirected };
}

export async function deletePrinter(sql: Sql, name: string): Promise<void> {
  await sql.query('DELETE FROM printers WHERE name = $1', [name]);
}

/** Sets columns of the printer's runtime state (pause, redirect, message, device check). */
export async function updatePrinter(sql: Sql, name: string, set: { paused?: boolean; redirect?: string | null; message?: unknown; physical?: unknown }): Promise<PrinterRow> {
  const { rows } = await sql.query<PrinterRow>(
    `UPDATE printers SET updated = now(),
       paused = COALESCE($2, paused),
       redirect = CASE WHEN $3 THEN $4 ELSE redirect END,
       message = CASE WHEN $5 THEN $6::jsonb ELSE message END,
       physical = CASE WHEN $7 THEN $8::jsonb ELSE physical END
     WHERE name = $1 RETURNING *`,
    [name, set.paused ?? null, set.redirect !== undefined, set.redirect ?? null,
      set.message !== undefined, set.message == null ? null : JSON.stringify(set.message),
      set.physical !== undefined, set.physical == null ? null : JSON.stringify(set.physical)]);
  return rows[0]!;
}

/**
 * Serialises redirect changes (an advisory lock for the transaction), so that
 * two concurrent ones cannot close a loop together.
 */
export async function lockRedirects(tx: Sql): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('print.redirects'))`);
}

/** The device error the dispatch engine saw on the printer (cleared by its next delivery, `printedCte`). */
export async function recordDeviceError(tx: Sql, printer: string, message: string): Promise<void> {
  await tx.query(`UPDATE printers SET error = jsonb_build_object('message', $2::text, 'at', now()) WHERE name = $1`, [printer, message.slice(0, 1000)]);
}

/** Whether a delivery writes the printer's row: at most once a second, unless there is a device error to clear. */
const PRINTED_DUE = `(last_printed IS NULL OR last_printed < now() - interval '1 second' OR error IS NOT NULL)`;

/**
 * A delivery's write to its printer, as the CTE `d` of the jobs store's
 * outcome statements (statements/delivered-and-next*.sql): `last_printed`
 * now and the device error cleared, throttled by PRINTED_DUE (a busy
 * printer's row is not rewritten for every job). Carried in the outcome's
 * statement, it commits with the outcome and costs no round trip.
 * `where`: the one printer and when to write it; `namesIn`: a query of the
 * printers' names, whose rows are locked in name order first.
 */
export const printedCte = (which: { where: string } | { namesIn: string }): string => ('where' in which
  ? `d AS (UPDATE printers SET last_printed = now(), error = NULL
  WHERE ${which.where}
    AND ${PRINTED_DUE})`
  : `d AS (UPDATE printers SET last_printed = now(), error = NULL
  WHERE name IN (SELECT name FROM printers WHERE name IN (${which.namesIn})
      AND ${PRINTED_DUE}
      -- in name order, as a batch of submissions share-locks them (submit-jobs.sql): no cycle of waits
      ORDER BY name FOR NO KEY UPDATE)
    AND ${PRINTED_DUE})`);
