import type { Sql } from '../../../../storage/driver/database.js';
import { asBuffer, JOB_COLUMNS, type PrintJobRow } from './job-row.js';

/** Reads of print jobs, their documents and the print log; every write is job-store.ts's. */

export async function getJob(sql: Sql, id: number, lock = false): Promise<PrintJobRow | undefined> {
  const { rows } = await sql.query<PrintJobRow>(`SELECT ${JOB_COLUMNS} FROM print_jobs WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0];
}

/** The job's document when it is stored with the job (migration 016); undefined: it is in the blob store. */
export async function inlineDocument(sql: Sql, jobId: number | string): Promise<Buffer | undefined> {
  const { rows } = await sql.query<{ bytes: Uint8Array }>(`SELECT ${INLINE_DOCUMENT_OF('$1')} AS bytes`, [jobId]);
  return asBuffer(rows[0]?.bytes ?? null) ?? undefined;
}

/** SQL: the inline document of the job whose id is `id` (NULL: none), as a scalar subquery. */
export const INLINE_DOCUMENT_OF = (id: string) => `(SELECT bytes FROM print_documents WHERE job_id = ${id})`;

export type PrintLogLevel = 'debug' | 'info' | 'warning' | 'error';

/** A row of print_logs. */
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

/**
 * A printer's newest `limit` log lines, oldest first. With `jobsOf`, a job's
 * lines only when the job's creator or owner is among those identities (an
 * empty list: no job lines); the printer's own lines (no job) always.
 */
export async function printerLog(sql: Sql, printer: string, limit: number, jobsOf?: readonly string[]): Promise<PrintLogRow[]> {
  const { rows } = await sql.query<PrintLogRow>(
    `SELECT * FROM (SELECT l.* FROM print_logs l WHERE l.printer = $1
       AND ($3::text[] IS NULL OR l.job_id IS NULL
            OR EXISTS (SELECT 1 FROM print_jobs j WHERE j.id = l.job_id AND (j.creator = ANY($3::text[]) OR j.owner = ANY($3::text[]))))
     ORDER BY l.id DESC LIMIT $2) l ORDER BY id`, [printer, limit, jobsOf ?? null]);
  return rows;
}
