import { canJobMove, WAITING_JOB_STATES, type JobState } from '../job-states.js';

/** A print job's row, its columns, and the SQL pieces the statements over print_jobs share. No statement runs here. */

/** An intermediate file of a job (the flow's output, kept or dropped per tempfiles). */
export interface JobStage {
  stage: string;
  sha256: string;
  size: number;
  mimeType: string;
  created: string;
}

/** A row of print_jobs (migration 009 documents each column). */
export interface PrintJobRow {
  id: string;
  status: JobState;
  printer: string;
  redirected_from: string | null;
  creator: string | null;
  owner: string | null;
  name: string;
  file_name: string | null;
  mime_type: string;
  size: string;
  blob_sha256: string;
  copies: number;
  priority: number;
  pages: number | null;
  checkin: { type: string; source?: string | null };
  task: { sid: string; tid: string; item?: string; run?: number } | null;
  flow: string | null;
  stages: JobStage[];
  keep_tempfiles: boolean;
  retention_sec: number | null;
  finished: Date | null;
  message: string | null;
  created: Date;
  updated: Date;
  seq: string;
  attempts: number;
  next_attempt_at: Date | null;
  handoff_at: Date | null;
  /** The token of the run opening that handed it off (open-run.sql), else null (migration 029). */
  handoff_token: string | null;
}

/**
 * print_jobs' columns as a PrintJobRow holds them, for statements that read or
 * return whole jobs: every column but `listing` (migration 017), the listed
 * JSON text only listings read (about 500 bytes a job no other reader needs).
 * test/areas/print/jobs/job-listing-column.test.ts holds the list to the table.
 */
export const JOB_COLUMN_NAMES = ['id', 'status', 'printer', 'redirected_from', 'creator', 'owner', 'name', 'file_name', 'mime_type', 'size',
  'blob_sha256', 'copies', 'priority', 'pages', 'checkin', 'task', 'flow', 'stages', 'keep_tempfiles', 'retention_sec', 'finished', 'message',
  'created', 'updated', 'seq', 'attempts', 'next_attempt_at', 'handoff_at', 'handoff_token'] as const satisfies readonly (keyof PrintJobRow)[];
/** JOB_COLUMN_NAMES as a select list, each qualified by `alias` when given (`j.id, j.status, …`). */
export const jobColumns = (alias?: string): string => JOB_COLUMN_NAMES.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');
export const JOB_COLUMNS = jobColumns();

/** Ids are bigints; anything else names no job (404, never a SQL error). */
/**
 * How a job's hand-off line names the device: a network printer by its
 * connection, a directory printer without its path (a job's log names no
 * absolute server path). The statements that hand off (`hand-off-head.sql`,
 * `delivered-and-next-many.sql`) write the same with a `CASE`.
 */
export const handoffTarget = (connection: string): string => (connection.startsWith('file:') ? "the printer's directory" : connection);

export const parseJobId = (raw: string): number | undefined => (/^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : undefined);

/** A bytea value as a Buffer: pg gives a Buffer, PGlite a Uint8Array. */
export const asBuffer = (bytes: Uint8Array | null): Buffer | null =>
  bytes && (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/*
 * SQL pieces the statements over print_jobs share (the store's .sql files
 * take them as `:name` variables, storage/sql-file.ts), so that the states a
 * statement names are job-states.ts' and never a copy of them.
 */

/** `('a', 'b')`: states as an SQL list (the states are fixed words, nothing to escape). */
const sqlList = (states: readonly JobState[]) => `(${states.map((st) => `'${st}'`).join(', ')})`;

/** The states a job waits in for the engine, as an SQL list. */
export const SQL_WAITING = sqlList(WAITING_JOB_STATES);

/** The waiting states a job is handed to the device from (JOB_TRANSITIONS: those that may become `processing`), as an SQL list. */
export const SQL_DELIVERABLE = sqlList(WAITING_JOB_STATES.filter((st) => canJobMove(st, 'processing')));

/**
 * The head of each waiting state of the printer `printer` (SQL: `$1`,
 * `p.name`) straight from the (printer, status, priority DESC, seq) index,
 * as `UNION ALL`ed subqueries of (id, priority, seq); the best of them is the
 * printer's head: no sort of the whole queue, however long it is.
 */
export const waitingHeads = (printer: string): string => WAITING_JOB_STATES
  .map((st) => `(SELECT id, priority, seq FROM print_jobs WHERE printer = ${printer} AND status = '${st}' ORDER BY priority DESC, seq LIMIT 1)`)
  .join(' UNION ALL ');

/**
 * The first key of the two-key advisory lock a printer's dispatch takes
 * (`lockPrinterDispatch`, and the outcome statements themselves): the
 * dispatch engine's own class.
 */
export const DISPATCH_LOCK_CLASS = 7209;
