import { AppError } from '../../../../errors/app-error.js';
import type { ODataQuery } from '../../../../query/odata.js';
import { toSql } from '../../../../query/to-sql.js';
import { JOB_FIELDS } from '../job-fields.js';
import type { Sql } from '../../../../storage/driver/database.js';
import type { FusedStatement } from '../../../../outbox/outbox.js';
import { CHAIN_END, redirectChain } from '../../printers/printer-store.js';
import { canJobMove, FINAL_JOB_STATES, isFinalJobState, type JobState } from '../job-states.js';
import { LOG_TEXT_MAX, logText, printLog, type PrintLogLevel } from '../print-log.js';

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
  task: { sid: string; tid: string; item?: string } | null;
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
}

/**
 * print_jobs' columns as a PrintJobRow holds them, for statements that read or
 * return whole jobs: every column but `listing` (migration 017), the listed
 * JSON text only listings read (about 500 bytes a job no other reader needs).
 * test/areas/print/jobs/job-listing-column.test.ts holds the list to the table.
 */
export const JOB_COLUMN_NAMES = ['id', 'status', 'printer', 'redirected_from', 'creator', 'owner', 'name', 'file_name', 'mime_type', 'size',
  'blob_sha256', 'copies', 'priority', 'pages', 'checkin', 'task', 'flow', 'stages', 'keep_tempfiles', 'retention_sec', 'finished', 'message',
  'created', 'updated', 'seq', 'attempts', 'next_attempt_at', 'handoff_at'] as const satisfies readonly (keyof PrintJobRow)[];
/** JOB_COLUMN_NAMES as a select list, each qualified by `alias` when given (`j.id, j.status, …`). */
export const jobColumns = (alias?: string): string => JOB_COLUMN_NAMES.map((c) => (alias ? `${alias}.${c}` : c)).join(', ');
export const JOB_COLUMNS = jobColumns();

export interface NewJob {
  status: JobState;
  printer: string;
  redirectedFrom: string | null;
  creator: string | null;
  owner: string | null;
  name: string;
  fileName: string | null;
  mimeType: string;
  size: number;
  sha256: string;
  copies: number;
  priority: number;
  checkin: { type: string; source?: string | null };
  task: { sid: string; tid: string; item?: string } | null;
  flow: string | null;
  retentionSec: number | null;
}

/** Stores the job and, when its document is small enough to live with it (job-document.ts), the document's bytes. */
export async function insertJob(sql: Sql, j: NewJob, document: Buffer | null): Promise<PrintJobRow> {
  const { rows } = await sql.query<PrintJobRow>(
    `WITH main AS (INSERT INTO print_jobs (status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
       copies, priority, checkin, task, flow, retention_sec)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING ${JOB_COLUMNS}),
     ${DOCUMENT_CTE('$17')}
     SELECT * FROM main`,
    [j.status, j.printer, j.redirectedFrom, j.creator, j.owner, j.name, j.fileName, j.mimeType, j.size, j.sha256,
      j.copies, j.priority, JSON.stringify(j.checkin), j.task ? JSON.stringify(j.task) : null, j.flow, j.retentionSec, document],
  );
  return rows[0]!;
}

/** The CTE that stores the inserted job's (`main`) document inline when the parameter is not NULL. */
const DOCUMENT_CTE = (param: string) => `inline_document AS (INSERT INTO print_documents (job_id, bytes) SELECT id, ${param}::bytea FROM main WHERE ${param}::bytea IS NOT NULL)`;

/** The job's document when it is stored with the job (migration 016); undefined: it is in the blob store. */
export async function inlineDocument(sql: Sql, jobId: number | string): Promise<Buffer | undefined> {
  const { rows } = await sql.query<{ bytes: Uint8Array }>(`SELECT ${INLINE_DOCUMENT_OF('$1')} AS bytes`, [jobId]);
  return asBuffer(rows[0]?.bytes ?? null) ?? undefined;
}

/** SQL: the inline document of the job whose id is `id` (NULL: none), as a scalar subquery. */
export const INLINE_DOCUMENT_OF = (id: string) => `(SELECT bytes FROM print_documents WHERE job_id = ${id})`;

/** A bytea value as a Buffer: pg gives a Buffer, PGlite a Uint8Array. */
export const asBuffer = (bytes: Uint8Array | null): Buffer | null =>
  bytes && (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));

/** What a submission needs to know before it reads the document: the printer's flow, where its redirect chain ends, whether the flow exists. */
export interface SubmitTarget {
  /** The end of the printer's redirect chain. */
  target: string;
  /** The flow the job runs (`flow` given, else the printer's). */
  flow: string | null;
  flowExists: boolean;
}

/** The printer named `printer` as a submission sees it, in one statement; undefined when there is none. `flow` undefined: the printer's. */
export async function submitTarget(sql: Sql, printer: string, flow: string | null | undefined): Promise<SubmitTarget | undefined> {
  const { rows } = await sql.query<{ target: string; flow: string | null; flow_exists: boolean }>(
    `WITH RECURSIVE ${redirectChain('(SELECT name, redirect FROM printers WHERE name = $1)')}
     SELECT chain_end.name AS target, f.flow, EXISTS (SELECT 1 FROM print_flows WHERE name = f.flow) AS flow_exists
       FROM printers p CROSS JOIN ${CHAIN_END}
       CROSS JOIN LATERAL (SELECT CASE WHEN $2::boolean THEN p.flow ELSE $3::text END AS flow) f
      WHERE p.name = $1`,
    [printer, flow === undefined, flow ?? null]);
  const row = rows[0];
  return row && { target: row.target, flow: row.flow, flowExists: row.flow_exists };
}

/** `submitTarget` for several submissions in one statement; answers in their order (undefined: no such printer). */
export async function submitTargets(sql: Sql, asked: readonly { printer: string; flow: string | null | undefined }[]): Promise<(SubmitTarget | undefined)[]> {
  const { rows } = await sql.query<{ k: string | number; target: string; flow: string | null; flow_exists: boolean }>(
    `WITH RECURSIVE i AS (SELECT * FROM unnest($1::text[], $2::boolean[], $3::text[]) WITH ORDINALITY AS i(printer, own_flow, flow, k)),
     chain(k, name, redirect, depth) AS (
       SELECT i.k, p.name, p.redirect, 0 FROM i JOIN printers p ON p.name = i.printer
       UNION ALL
       SELECT c.k, p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64),
     chain_end AS (SELECT DISTINCT ON (k) k, name FROM chain ORDER BY k, depth DESC)
     SELECT i.k, e.name AS target, f.flow, EXISTS (SELECT 1 FROM print_flows WHERE name = f.flow) AS flow_exists
       FROM i JOIN printers p ON p.name = i.printer JOIN chain_end e ON e.k = i.k
       CROSS JOIN LATERAL (SELECT CASE WHEN i.own_flow THEN p.flow ELSE i.flow END AS flow) f`,
    [asked.map((a) => a.printer), asked.map((a) => a.flow === undefined), asked.map((a) => a.flow ?? null)]);
  const out: (SubmitTarget | undefined)[] = asked.map(() => undefined);
  for (const r of rows) out[Number(r.k) - 1] = { target: r.target, flow: r.flow, flowExists: r.flow_exists };
  return out;
}

/**
 * The INSERT of a submitted job and its log line as one statement, for
 * `Outbox.addWith`: share-locks the printer it was sent to (a delete or
 * redirect of it waits for the commit), walks the redirect chain from that
 * row and inserts the job on the chain's end, only if that is still
 * `target` (what the caller read before the document streamed in). No row
 * when the printer is gone or its chain ends elsewhere now. A job for a
 * printer that is paused or disabled (and not redirected) stores no dispatch
 * wake-up: the operation that releases it wakes it, and it waits for this
 * share lock, so it commits after the job. A small `document` is stored with
 * the job in the same statement (print_documents, job-document.ts).
 */
export function insertJobStatement(sentTo: string, target: string, j: Omit<NewJob, 'printer' | 'redirectedFrom'>, log: string, document: Buffer | null): FusedStatement {
  return {
    with: `sent_to AS (SELECT name, redirect, paused, enabled FROM printers WHERE name = $1 FOR SHARE), ${redirectChain('sent_to')}`,
    text: `INSERT INTO print_jobs (status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
         copies, priority, checkin, task, flow, retention_sec)
       SELECT $3, chain_end.name, CASE WHEN chain_end.name = $1 THEN NULL ELSE $1 END, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
         FROM ${CHAIN_END} WHERE chain_end.name = $2
       RETURNING ${JOB_COLUMNS}`,
    also: `logged AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', $17 FROM main), ${DOCUMENT_CTE('$18')}`,
    // a printer held (paused, disabled) needs no wake-up: read under the share lock, so its resume or
    // re-enabling (which wakes it) commits after this job and its run sees it
    jobIf: 'NOT EXISTS (SELECT 1 FROM sent_to WHERE redirect IS NULL AND (paused OR NOT enabled))',
    params: [sentTo, target, j.status, j.creator, j.owner, j.name, j.fileName, j.mimeType, j.size, j.sha256,
      j.copies, j.priority, JSON.stringify(j.checkin), j.task ? JSON.stringify(j.task) : null, j.flow, j.retentionSec, logText(log), document],
  };
}

/** One submission of `insertJobsStatement`. */
export interface JobToInsert {
  sentTo: string;
  /** Where its redirect chain must end for the job to go in (the printer itself when nobody looked it up). */
  target: string;
  /** The flow: the printer's (`ownFlow`), else `flow` (null: none). */
  ownFlow: boolean;
  flow: string | null;
  /** Whether the statement checks that the flow exists (nobody looked it up): no row when it does not. */
  checkFlow: boolean;
  job: Omit<NewJob, 'printer' | 'redirectedFrom' | 'status' | 'flow'>;
  /** The log line's start (`submitted by …, n bytes`); the statement adds the redirect and the state, as submitPrintJob's `logLine`. */
  logStart: string;
  document: Buffer | null;
  /** `jobIdFor('print.dispatch', { printer: target })`. */
  wakeJobId: string;
}

/**
 * `insertJobStatement` for several submissions at once, for
 * `Outbox.addEachWith` (one statement, one commit for all of them): per
 * submission what `insertJobStatement` does (share lock on the printer it
 * was sent to, the redirect chain walked from it, the job inserted on the
 * chain's end only if that is still `target`, its log line, a small document
 * with it), and one wake-up per target printer, not stored when every job for
 * it was sent to a held printer. It also does the lookup `submitTarget` does
 * before: the flow (the printer's or the one named; with `checkFlow`, no row
 * when it does not exist) and from it the initial state. The printers are
 * share-locked in name order and the wake-ups inserted in job id order, so
 * two such statements, or one and a dispatch statement that updates several
 * printers in name order, never wait for each other in a cycle. The job ids
 * are drawn first, so each answer row says which submission it is (`k`, from
 * 1); a submission without a row was not inserted (its printer is unknown,
 * gone or redirected elsewhere now, or its flow unknown). The documents
 * travel as one bytea (offsets and lengths per submission).
 */
export function insertJobsStatement(items: readonly JobToInsert[]): FusedStatement & { jobs: string } {
  const offsets: (number | null)[] = [];
  const lengths: (number | null)[] = [];
  let at = 0;
  for (const it of items) {
    offsets.push(it.document ? at : null);
    lengths.push(it.document ? it.document.length : null);
    at += it.document?.length ?? 0;
  }
  const documents = Buffer.concat(items.flatMap((it) => (it.document ? [it.document] : [])));
  const col = <T>(f: (it: JobToInsert) => T) => items.map(f);
  return {
    with: `i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
         $11::bigint[], $12::text[], $13::int[], $14::int[], $15::text[], $16::text[], $17::int[], $18::text[], $19::int[], $20::int[], $22::text[])
         WITH ORDINALITY AS i(sent_to, target, own_flow, given_flow, check_flow, creator, owner, name, file_name, mime_type, size, sha256, copies, priority,
           checkin, task, retention_sec, log_start, doc_off, doc_len, wake_id, k)),
     sent_to AS (SELECT name, redirect, paused, enabled, flow FROM printers WHERE name IN (SELECT sent_to FROM i) ORDER BY name FOR SHARE),
     chain(start, name, redirect, depth) AS (
       SELECT name, name, redirect, 0 FROM sent_to
       UNION ALL
       SELECT c.start, p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64),
     chain_end AS (SELECT DISTINCT ON (start) start, name FROM chain ORDER BY start, depth DESC),
     ok AS MATERIALIZED (SELECT o.*, CASE WHEN coalesce(o.flow, '') = '' THEN 'waitprocessing' ELSE 'waitpreprocessing' END AS status,
         nextval(pg_get_serial_sequence('print_jobs', 'id')) AS id, nextval('print_jobs_seq') AS seq
       FROM (SELECT i.*, CASE WHEN i.own_flow THEN s.flow ELSE i.given_flow END AS flow
         FROM i JOIN sent_to s ON s.name = i.sent_to JOIN chain_end e ON e.start = i.sent_to AND e.name = i.target ORDER BY i.k) o
       WHERE NOT o.check_flow OR coalesce(o.flow, '') = '' OR EXISTS (SELECT 1 FROM print_flows f WHERE f.name = o.flow))`,
    text: `INSERT INTO print_jobs (id, seq, status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
         copies, priority, checkin, task, flow, retention_sec)
       OVERRIDING SYSTEM VALUE
       SELECT id, seq, status, target, CASE WHEN target = sent_to THEN NULL ELSE sent_to END, creator, owner, name, file_name, mime_type, size, sha256,
         copies, priority, checkin::jsonb, task::jsonb, flow, retention_sec
         FROM ok ORDER BY k
       RETURNING ${JOB_COLUMNS}`,
    also: `logged AS (INSERT INTO print_logs (job_id, printer, level, text)
       SELECT id, target, 'info', left(log_start || CASE WHEN target = sent_to THEN '' ELSE ' (sent to "' || sent_to || '", redirected)' END || ' -> ' || status, ${LOG_TEXT_MAX})
         FROM ok ORDER BY k),
     inline_document AS (INSERT INTO print_documents (job_id, bytes) SELECT id, substring($21::bytea FROM doc_off + 1 FOR doc_len) FROM ok WHERE doc_len IS NOT NULL)`,
    // a printer held (paused, disabled, not redirected) needs no wake-up, as in insertJobStatement
    jobs: `SELECT DISTINCT ok.wake_id, jsonb_build_object('printer', ok.target) FROM ok JOIN sent_to s ON s.name = ok.sent_to
       WHERE NOT (s.redirect IS NULL AND (s.paused OR NOT s.enabled)) ORDER BY 1`,
    select: '(SELECT k FROM ok WHERE ok.id = main.id) AS k',
    params: [col((it) => it.sentTo), col((it) => it.target), col((it) => it.ownFlow), col((it) => it.flow), col((it) => it.checkFlow),
      col((it) => it.job.creator), col((it) => it.job.owner), col((it) => it.job.name), col((it) => it.job.fileName), col((it) => it.job.mimeType),
      col((it) => it.job.size), col((it) => it.job.sha256), col((it) => it.job.copies), col((it) => it.job.priority), col((it) => JSON.stringify(it.job.checkin)),
      col((it) => (it.job.task ? JSON.stringify(it.job.task) : null)), col((it) => it.job.retentionSec),
      col((it) => it.logStart), offsets, lengths, documents, col((it) => it.wakeJobId)],
  };
}

/** Ids are bigints; anything else names no job (404, never a SQL error). */
export const parseJobId = (raw: string): number | undefined => (/^[1-9][0-9]{0,15}$/.test(raw) ? Number(raw) : undefined);

export async function getJob(sql: Sql, id: number, lock = false): Promise<PrintJobRow | undefined> {
  const { rows } = await sql.query<PrintJobRow>(`SELECT ${JOB_COLUMNS} FROM print_jobs WHERE id = $1${lock ? ' FOR UPDATE' : ''}`, [id]);
  return rows[0];
}

export interface TransitionOptions {
  /** Text for the job log; a default names the change. */
  log?: string;
  level?: PrintLogLevel;
  /** Shown with the job (the reason of an error). */
  message?: string | null;
  /** Further columns, set in the same statement. */
  set?: { printer?: string; redirectedFrom?: string | null; requeue?: boolean; resetAttempts?: boolean };
  /**
   * The dispatch engine's columns, set in the same statement: `handoff`
   * marks (`set`) or clears (`clear`) the hand-off, `attempt` counts a
   * delivery attempt, `retryInMs` sets `next_attempt_at` that far ahead.
   */
  dispatch?: { handoff?: 'set' | 'clear'; attempt?: boolean; retryInMs?: number };
}

/**
 * Moves a locked job to `to` if JOB_TRANSITIONS allows it (else 412
 * INVALID_STATE), and logs the change in the same transaction. The one way a
 * job's state changes (API operations and the dispatch engine).
 * `set.requeue` gives the job a new place at the back of its queue.
 */
export async function transitionJob(tx: Sql, job: PrintJobRow, to: JobState, opts: TransitionOptions = {}): Promise<PrintJobRow> {
  if (job.status !== to && !canJobMove(job.status, to)) {
    throw new AppError('INVALID_STATE', `job ${job.id} is ${job.status}; it cannot become ${to}`, { id: Number(job.id), status: job.status, to });
  }
  const set = opts.set ?? {};
  const { rows } = await tx.query<PrintJobRow>(
    // the change and its log line in one statement (one round trip: the dispatch engine does this twice per job)
    `WITH u AS (UPDATE print_jobs SET status = $2, updated = now(),
       finished = CASE WHEN $3 THEN now() ELSE NULL END,
       message = CASE WHEN $4::boolean THEN $5 ELSE message END,
       printer = COALESCE($6, printer),
       redirected_from = CASE WHEN $7::boolean THEN $8 ELSE redirected_from END,
       seq = CASE WHEN $9 THEN nextval('print_jobs_seq') ELSE seq END,
       attempts = CASE WHEN $10 THEN 0 WHEN $12 THEN attempts + 1 ELSE attempts END,
       next_attempt_at = CASE WHEN $10 THEN NULL WHEN $13::bigint IS NOT NULL THEN now() + $13::bigint * interval '1 millisecond' ELSE next_attempt_at END,
       -- a requeued job (repeat, resume, move) starts a new delivery
       handoff_at = CASE WHEN $9 THEN NULL ELSE CASE $11::text WHEN 'set' THEN now() WHEN 'clear' THEN NULL ELSE handoff_at END END
     WHERE id = $1 RETURNING ${JOB_COLUMNS}),
     l AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, $14, $15 FROM u)
     SELECT * FROM u`,
    [job.id, to, isFinalJobState(to), opts.message !== undefined, opts.message ?? null, set.printer ?? null,
      set.redirectedFrom !== undefined, set.redirectedFrom ?? null, set.requeue ?? false, set.resetAttempts ?? false,
      opts.dispatch?.handoff ?? null, opts.dispatch?.attempt ?? false, opts.dispatch?.retryInMs ?? null,
      opts.level ?? (to === 'error' ? 'error' : 'info'), logText(opts.log ?? (job.status === to ? `job ${to}` : `${job.status} -> ${to}`))],
  );
  const row = rows[0]!;
  return row;
}

const jsonText = (col: string) => `to_json(${col})::text`;
const orNull = (expr: string) => `coalesce(${expr}, 'null')`;

/** Around a jsonb value or a timestamp in a listed page whose text present.ts rewrites (see LISTED_FIELDS). */
export const LISTING_MARK = '\x01';
/**
 * A jsonb column's text between two LISTING_MARKs, after a letter naming the
 * rewrite (`c`: written compactly, `s`: the presented stages; `t` is a
 * timestamp's, isoMarked); NULL for NULL. The mark cannot occur anywhere else
 * in a page: PostgreSQL escapes control characters in the JSON text of strings
 * (`to_json`) and of jsonb alike, and a timestamp's text has none.
 */
const raw = (rewrite: 'c' | 's', col: string) => `chr(1) || '${rewrite}' || ${col}::text || chr(1)`;
/**
 * A timestamptz's own text in UTC (`2026-11-23 04:00:00.123456`, DateStyle ISO as both drivers run it) between
 * LISTING_MARKs after `t`; present.ts writes it as `Date.toISOString()` does (UTC, milliseconds, `Z`). `to_char`
 * with the ISO pattern cost 0.5 µs a value in PostgreSQL, this text about 0.1 (docs/benchmarks.md, print listing).
 */
const isoMarked = (col: string): Part[] => [{ lit: `${LISTING_MARK}t` }, `(${col} AT TIME ZONE 'UTC')::text`, { lit: LISTING_MARK }];
/** isoMarked as SQL text, for a value that may be NULL (then NULL). */
const isoMarkedSql = (col: string) => `'${LISTING_MARK}t' || (${col} AT TIME ZONE 'UTC')::text || '${LISTING_MARK}'`;

/**
 * How a listing presents each field of a job (presentJob's order, present.ts),
 * as the field's JSON text built by PostgreSQL: `to_json` escapes strings
 * exactly as `JSON.stringify` does; numbers as text, timestamps as their own
 * text between marks (isoMarked); the retention computed from the defaults. jsonb (checkin, task, stages) comes as
 * its text between marks, since PostgreSQL writes it with spaces
 * (`{"type": "api"}`) and present.ts makes it compact (checking that in SQL cost
 * more than all the other fields: a regular expression, 1–5 µs a value).
 * Parsing 100 rows into numbers, Dates and objects, presenting them and
 * serialising them back was most of a listing's CPU in the API process
 * (bench/print-listing.ts, docs/benchmarks.md).
 */
type Part = string | { lit: string };
/** A timestamp that is never NULL, as a JSON string: the quotes and marks are literals, merged into the key's. */
const isoQuoted = (col: string): Part[] => [{ lit: '"' }, ...isoMarked(col), { lit: '"' }];
const LISTED_FIELDS: readonly [string, string | Part[] | ((d: RetentionDefaults) => string)][] = [
  ['id', 'id::text'],
  // one of the states the column's CHECK allows: nothing to escape
  ['status', [{ lit: '"' }, 'status', { lit: '"' }]],
  ['printer', jsonText('printer')],
  ['user', orNull(jsonText('creator'))],
  ['owner', orNull(jsonText('owner'))],
  ['name', jsonText('name')],
  ['fileName', orNull(jsonText('file_name'))],
  ['mimeType', jsonText('mime_type')],
  ['size', 'size::text'],
  ['copies', 'copies::text'],
  ['priority', 'priority::text'],
  ['pages', orNull('pages::text')],
  ['checkin', raw('c', 'checkin')],
  ['task', orNull(raw('c', 'task'))],
  ['flow', orNull(jsonText('flow'))],
  ['redirectedFrom', orNull(jsonText('redirected_from'))],
  ['message', orNull(jsonText('message'))],
  ['created', isoQuoted('created')],
  ['updated', isoQuoted('updated')],
  ['finished', orNull(`'"' || ${isoMarkedSql('finished')} || '"'`)],
  ['keepTempfiles', 'keep_tempfiles::text'],
  // most jobs have none
  ['stages', `CASE WHEN stages = '[]'::jsonb THEN '[]' ELSE ${raw('s', 'stages')} END`],
  ['retention', retentionSql],
  ['attempts', 'attempts::text'],
  ['nextAttempt', orNull(`'"' || ${isoMarkedSql('next_attempt_at')} || '"'`)],
];
const LISTED_BY_NAME = new Map(LISTED_FIELDS);
/** Every listed field's name, in presentJob's order (a listing without `$select`). */
export const LISTED_FIELD_NAMES: readonly string[] = LISTED_FIELDS.map(([n]) => n);

/** Seconds a job is kept after each state unless it sets its own (config `print.retention`). */
export type RetentionDefaults = Record<'processed' | 'canceled' | 'error' | 'paused', number>;

/**
 * presentJob's `retention` as JSON text (present.ts `retentionOf`): the job's own
 * seconds, else the default of its state; kept from `finished` in a final state,
 * from `updated` when paused. The defaults are validated integers, written as
 * literals so that the statement's text stays the same.
 */
function retentionSql(d: RetentionDefaults): string {
  const int = (n: number) => String(Math.trunc(Number(n)));
  const keep = `coalesce(retention_sec, CASE status WHEN 'processed' THEN ${int(d.processed)} WHEN 'canceled' THEN ${int(d.canceled)}`
    + ` WHEN 'error' THEN ${int(d.error)} WHEN 'paused' THEN ${int(d.paused)} END)`;
  const finals = FINAL_JOB_STATES.map((st) => `'${st}'`).join(', ');
  const since = `CASE WHEN status IN (${finals}) THEN finished WHEN status = 'paused' THEN updated END`;
  return `'{"seconds":' || coalesce(${keep}::text, 'null') || ',"custom":' || (retention_sec IS NOT NULL)::text`
    + ` || ',"deleteAfter":' || coalesce('"' || ${isoMarkedSql(`((${since}) + make_interval(secs => ${keep}))`)} || '"', 'null') || '}'`;
}

/**
 * `a || b || c …` as a balanced tree of `||`: PostgreSQL evaluates a chain left
 * to right, copying the growing row at every step (about 50 steps for a
 * 550-byte row); the tree copies each byte about log2(pieces) times.
 */
function concatSql(xs: string[]): string {
  if (xs.length === 1) return xs[0]!;
  const half = xs.length >> 1;
  return `(${concatSql(xs.slice(0, half))} || ${concatSql(xs.slice(half))})`;
}

/** The pieces of a listed row's JSON text for these fields, in order, adjacent literals merged (`,"created":"`). */
function rowParts(names: readonly string[], retention: RetentionDefaults, { open = true, close = true } = {}): Part[] {
  const parts: Part[] = [];
  const push = (x: Part) => {
    const prev = parts[parts.length - 1];
    if (typeof x !== 'string' && prev !== undefined && typeof prev !== 'string') prev.lit += x.lit;
    else parts.push(typeof x === 'string' ? x : { lit: x.lit });
  };
  if (open && !names.length) push({ lit: '{' });
  names.forEach((name, i) => {
    const f = LISTED_BY_NAME.get(name)!;
    push({ lit: `${i === 0 && open ? '{' : ','}"${name}":` });
    for (const x of typeof f === 'function' ? [f(retention)] : typeof f === 'string' ? [f] : f) push(x);
  });
  if (close) push({ lit: '}' });
  return parts;
}

/**
 * The fields migration 017's `listing` column holds for every job, in order:
 * `id` to `stages`, the text of a whole listing's row up to the fields that
 * are not the row's alone (`retention` depends on the configuration).
 */
export const LISTING_COLUMN_FIELDS: readonly string[] = LISTED_FIELD_NAMES.slice(0, LISTED_FIELD_NAMES.indexOf('stages') + 1);
const LISTING_TAIL_FIELDS = LISTED_FIELD_NAMES.slice(LISTING_COLUMN_FIELDS.length);

/**
 * A whole row's JSON text from the `listing` column and the fields after it.
 * The column is written by a trigger with every row (never NULL); the fallback
 * builds the same fields here should it be.
 */
const fromListingColumn = (retention: RetentionDefaults): string =>
  `(coalesce(listing, ${concatSql(rowParts(LISTING_COLUMN_FIELDS, retention, { close: false }).map(partSql))})`
  + ` || ${concatSql(rowParts(LISTING_TAIL_FIELDS, retention, { open: false }).map(partSql))})`;
const partSql = (x: Part) => typeof x === 'string' ? `(${x})` : `'${x.lit}'`;

/** Each listed field's piece of the row's JSON text on its own (`',"status":"' || (status) || '"'`), for bench/print-listing-sql.ts. */
export const listedFieldsSql = (retention: RetentionDefaults): string[] => LISTED_FIELDS.map(([name, f], i) =>
  [{ lit: `${i === 0 ? '{' : ','}"${name}":` }, ...(typeof f === 'function' ? [f(retention)] : typeof f === 'string' ? [f] : f)].map(partSql).join(' || '));

const projections = new Map<string, string>();

/** A listed job's JSON text (`{"id":1,…}`) for the presented fields (`$select`, else all), built once per field list. */
function rowJson(select: readonly string[] | undefined, retention: RetentionDefaults): string {
  const names = select ? [...new Set(select)].filter((n) => LISTED_BY_NAME.has(n)) : LISTED_FIELD_NAMES;
  const key = `${select ? 's' : '*'} ${names.join(',')} ${retention.processed} ${retention.canceled} ${retention.error} ${retention.paused}`;
  let p = projections.get(key);
  if (p) return p;
  p = select ? concatSql(rowParts(names, retention).map(partSql)) : fromListingColumn(retention);
  if (projections.size < 200) projections.set(key, p);
  return p;
}

/**
 * One page of an OData listing as JSON text (jsonb between LISTING_MARKs, for
 * present.ts `jobListWriter`), limited to `scope` (the caller's identities as
 * creator or owner) when given; `total` with `$inlinecount=allpages`.
 *
 * One statement returns the page as one text column per job, each row's JSON
 * built by PostgreSQL, joined here: a hundred rows of many columns cost the
 * API process more to receive than the text itself (docs/benchmarks.md). The
 * rows are not joined in PostgreSQL (`string_agg`, as until 2026-11-26): the
 * 55 KB value of a 100-job page and its copies were freed at the end of every
 * statement, and glibc gave that memory back to the kernel each time (a
 * `brk` shrink); on a virtual machine where that costs a TLB flush across
 * cores it took 1.5 ms of the backend's CPU per request (docs/benchmarks.md).
 * `$top` is a literal, a validated integer like the retention defaults: a
 * `LIMIT $n` is costed as 10 % of the matching rows, more than a page of 100,
 * so PostgreSQL never chose the prepared statement's generic plan and planned
 * this statement again at every request (0.15 ms of its CPU each).
 * `$skip` stays a parameter, since every page of a walk would otherwise be a
 * statement of its own; it is left out when 0.
 */
export async function listJobs(sql: Sql, q: ODataQuery, scope: string[] | undefined, retention: RetentionDefaults): Promise<{ page: string; total?: number }> {
  const st = listingStatement(q, scope !== undefined, q.skip > 0, retention);
  const params = scope ? [scope, ...st.params] : [...st.params];
  const countParams = [...params];
  if (q.skip > 0) params.push(q.skip);
  const rows = await sql.queryArrays<[string]>(st.page, params);
  const page = `[${rows.map((r) => r[0]).join(',')}]`;
  if (!q.inlineCount) return { page };
  const c = await sql.query<{ n: string }>(st.count, countParams);
  return { page, total: Number(c.rows[0]!.n) };
}

interface ListingStatement {
  page: string;
  count: string;
  /** The filter's bound values (after the scope's `$1` when scoped). */
  params: unknown[];
}

/**
 * The listing's statements for parsed options, built once per options object:
 * `parseODataQuery` hands the same object back for the same options (bounded
 * there), so a polled listing reuses the very same text. Besides the
 * translation, that spares hashing and comparing a 3 KB text at every request
 * (the driver's statement name lookup, `pg`'s prepared-statement check), which
 * a string seen before answers from its cached hash and by identity.
 */
const listingStatements = new WeakMap<ODataQuery, Map<string, ListingStatement>>();

function listingStatement(q: ODataQuery, scoped: boolean, skipped: boolean, retention: RetentionDefaults): ListingStatement {
  const key = `${scoped ? 's' : '-'}${skipped ? 'o' : '-'} ${retention.processed} ${retention.canceled} ${retention.error} ${retention.paused}`;
  let byKey = listingStatements.get(q);
  const hit = byKey?.get(key);
  if (hit) return hit;
  const params: unknown[] = [];
  const where: string[] = [];
  if (scoped) {
    params.push(undefined); // the caller's identities, bound per request
    where.push('(creator = ANY($1::text[]) OR owner = ANY($1::text[]))');
  }
  const frag = toSql(q, JOB_FIELDS.map, params, 'id DESC');
  where.push(...frag.where);
  const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
  if (!Number.isSafeInteger(q.top) || q.top < 0) throw new Error(`listJobs: $top ${q.top} is not a count`);
  const window = `LIMIT ${q.top}${skipped ? ` OFFSET $${params.length + 1}` : ''}`;
  const st: ListingStatement = {
    page: `SELECT ${rowJson(q.select, retention)} AS j FROM print_jobs ${cond} ORDER BY ${frag.orderBy} ${window}`,
    count: `SELECT count(*) AS n FROM print_jobs ${cond}`,
    params: scoped ? params.slice(1) : params,
  };
  if (!byKey) listingStatements.set(q, (byKey = new Map()));
  if (byKey.size < 8) byKey.set(key, st);
  return st;
}

export async function deleteJob(sql: Sql, id: number): Promise<void> {
  await sql.query('DELETE FROM print_jobs WHERE id = $1', [id]);
}

/** PUT tempfiles: keep the stage files, or drop them now when the job no longer needs them. */
export async function setKeepTempfiles(sql: Sql, job: PrintJobRow, keep: boolean): Promise<PrintJobRow> {
  const drop = !keep && isFinalJobState(job.status);
  const { rows } = await sql.query<PrintJobRow>(
    `UPDATE print_jobs SET keep_tempfiles = $2, stages = CASE WHEN $3 THEN '[]'::jsonb ELSE stages END, updated = now() WHERE id = $1 RETURNING ${JOB_COLUMNS}`,
    [job.id, keep, drop]);
  await printLog(sql, { jobId: job.id, printer: job.printer, text: keep ? 'temporary files kept' : drop ? 'temporary files dropped' : 'temporary files will be dropped when the job ends' });
  return rows[0]!;
}

/** Housekeeping: jobs whose retention is over (final states from `finished`, paused from `updated`). */
export async function deleteExpiredJobs(sql: Sql, defaults: Record<'processed' | 'canceled' | 'error' | 'paused', number>, limit = 1000): Promise<number> {
  const { rowCount } = await sql.query(
    `DELETE FROM print_jobs WHERE id IN (
       SELECT id FROM print_jobs
       WHERE (status IN ('processed', 'canceled', 'error') AND finished IS NOT NULL
              AND finished + make_interval(secs => COALESCE(retention_sec, CASE status WHEN 'processed' THEN $1::int WHEN 'canceled' THEN $2::int ELSE $3::int END)) < now())
          OR (status = 'paused' AND updated + make_interval(secs => COALESCE(retention_sec, $4::int)) < now())
       LIMIT $5)`,
    [defaults.processed, defaults.canceled, defaults.error, defaults.paused, limit]);
  return rowCount;
}
