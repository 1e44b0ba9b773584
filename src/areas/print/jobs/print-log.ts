import type { Sql } from '../../../storage/driver/database.js';

export type PrintLogLevel = 'debug' | 'info' | 'warning' | 'error';

export interface PrintLogEntry {
  /** The job the entry is about; omitted for printer-only entries (pause, redirect, device check). */
  jobId?: number | string | null;
  printer: string;
  level?: PrintLogLevel;
  text: string;
}

/** A log line as stored: at most 4,000 characters (also used by `transitionJob`, which writes its line in its UPDATE's statement). */
export const logText = (text: string): string => text.slice(0, LOG_TEXT_MAX);
export const LOG_TEXT_MAX = 4000;

/**
 * The one way anything writes the print log (besides `transitionJob`, which
 * writes a state change's line in the same statement as the change): every job state change, every
 * backend message, every printer operation. Write it in the transaction of the
 * change it describes, so the log and the state never disagree. Read by
 * `GET /v3/jobs/{id}/logs|logfile` and `GET /v3/printers/{name}/logs`.
 */
export async function printLog(sql: Sql, entry: PrintLogEntry): Promise<void> {
  await sql.query('INSERT INTO print_logs (job_id, printer, level, text) VALUES ($1, $2, $3, $4)', [
    entry.jobId ?? null, entry.printer, entry.level ?? 'info', logText(entry.text),
  ]);
}

export interface PrintLogRow {
  id: string;
  job_id: string | null;
  printer: string | null;
  at: Date;
  level: PrintLogLevel;
  text: string;
}

export async function jobLog(sql: Sql, jobId: number): Promise<PrintLogRow[]> {
  const { rows } = await sql.query<PrintLogRow>('SELECT * FROM print_logs WHERE job_id = $1 ORDER BY id', [jobId]);
  return rows;
}

export async function printerLog(sql: Sql, printer: string, limit: number): Promise<PrintLogRow[]> {
  const { rows } = await sql.query<PrintLogRow>(
    'SELECT * FROM (SELECT * FROM print_logs WHERE printer = $1 ORDER BY id DESC LIMIT $2) l ORDER BY id', [printer, limit]);
  return rows;
}
