import { AppError } from '../../../../errors/app-error.js';
import type { Outbox } from '../../../../outbox/outbox.js';
import type { Sql } from '../../../../storage/driver/database.js';
import { fillSql, sqlFile, sqlParts } from '../../../../storage/sql-file.js';
import { CHAIN_END, printedCte, redirectChain, type PrinterRow } from '../../printers/printer-store.js';
import { canJobMove, isFinalJobState, type JobState } from '../job-states.js';
import { asBuffer, DISPATCH_LOCK_CLASS, JOB_COLUMNS, jobColumns, SQL_DELIVERABLE, SQL_WAITING, waitingHeads, type JobStage, type PrintJobRow } from './job-row.js';
import type { PrintLogLevel } from './job-reads.js';
import type { RetentionDefaults } from './listing.js';

/**
 * The print jobs' writer: the only module that inserts, updates or deletes
 * rows of print_jobs, print_documents (a job's small document) and
 * print_logs (the job and printer log), so that a change and its log line
 * can go in one statement. The API's operations, the submissions, the
 * printers' operations and the dispatch engine call it. Its combined
 * statements are the files in statements/ (each opens with its parameters,
 * the locks it takes in order and what it guarantees), read once here.
 */

/** A log line as stored: at most LOG_TEXT_MAX characters. */
export const LOG_TEXT_MAX = 4000;
const clip = (text: string): string => text.slice(0, LOG_TEXT_MAX);

const HAND_OFF_HEAD = sqlFile(new URL('./statements/includes/hand-off-head.sql', import.meta.url));
/** includes/hand-off-head.sql, its rows read only once `after` holds. */
const handOffHead = (after: string, handoffToken = 'NULL::uuid') => fillSql(HAND_OFF_HEAD, {
  after, handoff_token: handoffToken, waiting_heads: waitingHeads('$1'), waiting: SQL_WAITING, deliverable: SQL_DELIVERABLE, job_columns_j: jobColumns('j'), log_text_max: String(LOG_TEXT_MAX),
}, 'hand-off-head.sql');

const INSERT_JOB = sqlFile(new URL('./statements/insert-job.sql', import.meta.url), { job_columns: JOB_COLUMNS });
const SUBMIT_JOB = sqlParts(new URL('./statements/submit-job.sql', import.meta.url), ['with', 'text', 'also', 'jobIf'], {
  redirect_chain: redirectChain('sent_to'), chain_end: CHAIN_END, job_columns: JOB_COLUMNS,
});
const SUBMIT_JOBS = sqlParts(new URL('./statements/submit-jobs.sql', import.meta.url), ['with', 'text', 'also', 'jobs', 'select'], {
  job_columns: JOB_COLUMNS, log_text_max: String(LOG_TEXT_MAX),
});
const TRANSITION = sqlFile(new URL('./statements/transition.sql', import.meta.url), { job_columns: JOB_COLUMNS });
const CLAIM_NEXT = sqlFile(new URL('./statements/claim-next.sql', import.meta.url), { hand_off_head: handOffHead('true', '$2::uuid') });
const OPEN_RUN = sqlFile(new URL('./statements/open-run.sql', import.meta.url), {
  dispatch_lock_class: String(DISPATCH_LOCK_CLASS),
  hand_off_head: handOffHead('(SELECT clear FROM fl)', '$2::uuid'),
  waiting_heads: waitingHeads('$1'),
});
const DELIVERED_AND_NEXT = sqlFile(new URL('./statements/delivered-and-next.sql', import.meta.url), {
  dispatch_lock_class: String(DISPATCH_LOCK_CLASS),
  printed: printedCte({ where: 'name = $1 AND $7::boolean AND EXISTS (SELECT 1 FROM u)' }),
  hand_off_head: handOffHead('(SELECT locked FROM lk)'),
  waiting_heads: waitingHeads('$1'),
});
// the same statement with no hand-off (its `after` never holds): a stopping worker records the outcome and takes nothing new
const DELIVERED_ONLY = sqlFile(new URL('./statements/delivered-and-next.sql', import.meta.url), {
  dispatch_lock_class: String(DISPATCH_LOCK_CLASS),
  printed: printedCte({ where: 'name = $1 AND $7::boolean AND EXISTS (SELECT 1 FROM u)' }),
  hand_off_head: handOffHead('false'),
  waiting_heads: waitingHeads('$1'),
});
const DELIVERED_AND_NEXT_MANY = sqlFile(new URL('./statements/delivered-and-next-many.sql', import.meta.url), {
  dispatch_lock_class: String(DISPATCH_LOCK_CLASS),
  printed: printedCte({ namesIn: 'SELECT printer FROM u WHERE touch' }),
  waiting_heads_of_p: waitingHeads('p.name'), waiting_heads_of_i: waitingHeads('i.printer'), waiting: SQL_WAITING, deliverable: SQL_DELIVERABLE, job_columns_j: jobColumns('j'), log_text_max: String(LOG_TEXT_MAX),
});
const DELETE_EXPIRED = sqlFile(new URL('./statements/delete-expired.sql', import.meta.url));

// the outcome statements make a delivered job `processed` and hand off from the deliverable states without asking JOB_TRANSITIONS
if (!canJobMove('processing', 'processed')) throw new Error('JOB_TRANSITIONS no longer lets a delivered job become processed');

export interface PrintLogEntry {
  /** The job the entry is about; omitted for printer-only entries (pause, redirect, device check). */
  jobId?: number | string | null;
  printer: string;
  level?: PrintLogLevel;
  text: string;
}

/**
 * A line of the print log (besides the lines the statements here write with
 * the change they describe): every backend message, every printer
 * operation. Write it in the transaction of the change it describes, so the
 * log and the state never disagree. Read by `GET /v3/jobs/{id}/logs|logfile`
 * and `GET /v3/printers/{name}/logs`.
 */
export async function printLog(sql: Sql, entry: PrintLogEntry): Promise<void> {
  await sql.query('INSERT INTO print_logs (job_id, printer, level, text) VALUES ($1, $2, $3, $4)', [
    entry.jobId ?? null, entry.printer, entry.level ?? 'info', clip(entry.text),
  ]);
}

/**
 * A line about a job the caller does not hold locked (the engine's note on a
 * delivery that ended after its job left `processing`): on the job's log
 * while the job exists, else on the printer's log naming the job as deleted.
 * One statement: the job row is key-share locked while the line goes in, so
 * a delete cannot slip between the look and the foreign key.
 */
export async function printLogAboutJob(sql: Sql, entry: PrintLogEntry & { jobId: number | string }): Promise<void> {
  await sql.query(
    `WITH j AS (SELECT id FROM print_jobs WHERE id = $1 FOR KEY SHARE)
     INSERT INTO print_logs (job_id, printer, level, text)
     SELECT (SELECT id FROM j), $2, $3, CASE WHEN EXISTS (SELECT 1 FROM j) THEN $4 ELSE $5 END`,
    [entry.jobId, entry.printer, entry.level ?? 'info', clip(entry.text), clip(`job ${entry.jobId} (deleted meanwhile): ${entry.text}`)]);
}

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
  task: { sid: string; tid: string; item?: string; run?: number } | null;
  flow: string | null;
  retentionSec: number | null;
}

const jobParams = (j: Omit<NewJob, 'status' | 'printer' | 'redirectedFrom' | 'flow'>) => [j.creator, j.owner, j.name, j.fileName, j.mimeType, j.size, j.sha256,
  j.copies, j.priority, JSON.stringify(j.checkin), j.task ? JSON.stringify(j.task) : null];

/** Stores the job and, when its document is small enough to live with it (job-document.ts), the document's bytes (statements/insert-job.sql). */
export async function insertJob(sql: Sql, j: NewJob, document: Buffer | null): Promise<PrintJobRow> {
  const { rows } = await sql.query<PrintJobRow>(INSERT_JOB, [j.status, j.printer, j.redirectedFrom, ...jobParams(j), j.flow, j.retentionSec, document]);
  return rows[0]!;
}

/**
 * A submitted job, its log line and its outbox entry (the printer's dispatch
 * wake-up) as one statement (statements/submit-job.sql, `Outbox.addWith`),
 * in the caller's transaction: the job goes on the end of the redirect chain
 * of `sentTo` only if that is still `target` (what the caller read before the
 * document streamed in). Undefined when the printer is gone or its chain
 * ends elsewhere now.
 */
export async function insertSubmittedJob(outbox: Outbox, tx: Sql, sentTo: string, target: string, j: Omit<NewJob, 'printer' | 'redirectedFrom'>,
  log: string, document: Buffer | null): Promise<PrintJobRow | undefined> {
  const params = [sentTo, target, j.status, ...jobParams(j), j.flow, j.retentionSec, clip(log), document];
  return (await outbox.addWith<'print.dispatch', PrintJobRow>(tx, { ...SUBMIT_JOB, params }, 'print.dispatch', { printer: target }))[0];
}

/** One submission of `insertSubmittedJobs`. */
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
 * Several submissions as one statement (statements/submit-jobs.sql,
 * `Outbox.addEachWith`: one round trip, one commit for all of them, one
 * wake-up per target printer); answers in their order, undefined for a
 * submission that was not inserted. The documents travel as one bytea
 * (offsets and lengths per submission).
 */
export async function insertSubmittedJobs(outbox: Outbox, sql: Sql, items: readonly JobToInsert[]): Promise<(PrintJobRow | undefined)[]> {
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
  const params = [col((it) => it.sentTo), col((it) => it.target), col((it) => it.ownFlow), col((it) => it.flow), col((it) => it.checkFlow),
    col((it) => it.job.creator), col((it) => it.job.owner), col((it) => it.job.name), col((it) => it.job.fileName), col((it) => it.job.mimeType),
    col((it) => it.job.size), col((it) => it.job.sha256), col((it) => it.job.copies), col((it) => it.job.priority), col((it) => JSON.stringify(it.job.checkin)),
    col((it) => (it.job.task ? JSON.stringify(it.job.task) : null)), col((it) => it.job.retentionSec),
    col((it) => it.logStart), offsets, lengths, documents, col((it) => it.wakeJobId)];
  const rows = await outbox.addEachWith<'print.dispatch', PrintJobRow & { k: number | string }>(
    sql, { ...SUBMIT_JOBS, params }, 'print.dispatch', items.map((it) => ({ printer: it.target })));
  const out: (PrintJobRow | undefined)[] = items.map(() => undefined);
  for (const { k, ...row } of rows) out[Number(k) - 1] = row as PrintJobRow;
  return out;
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
 * INVALID_STATE), and logs the change in the same statement
 * (statements/transition.sql). The one way a job's state changes besides the
 * dispatch engine's hand-off and outcome statements below.
 * `set.requeue` gives the job a new place at the back of its queue.
 */
export async function transitionJob(tx: Sql, job: PrintJobRow, to: JobState, opts: TransitionOptions = {}): Promise<PrintJobRow> {
  if (job.status !== to && !canJobMove(job.status, to)) {
    throw new AppError('INVALID_STATE', `job ${job.id} is ${job.status}; it cannot become ${to}`, { id: Number(job.id), status: job.status, to });
  }
  const set = opts.set ?? {};
  const { rows } = await tx.query<PrintJobRow>(TRANSITION,
    [job.id, to, isFinalJobState(to), opts.message !== undefined, opts.message ?? null, set.printer ?? null,
      set.redirectedFrom !== undefined, set.redirectedFrom ?? null, set.requeue ?? false, set.resetAttempts ?? false,
      opts.dispatch?.handoff ?? null, opts.dispatch?.attempt ?? false, opts.dispatch?.retryInMs ?? null,
      opts.level ?? (to === 'error' ? 'error' : 'info'), clip(opts.log ?? (job.status === to ? `job ${to}` : `${job.status} -> ${to}`))],
  );
  return rows[0]!;
}

/** What a delivery needs of its printer: where it is, and whether it last reported an error. */
export type DeliveryPrinter = Pick<PrinterRow, 'name' | 'connection' | 'error'>;

/**
 * A job handed off to its printer (`processing`, the hand-off marked):
 * the dispatch engine's `deliver` step. `document`: the job's inline
 * document read with the hand-off (null: it is in the blob store; absent:
 * not read, see job-document.ts).
 */
export interface HandedOff {
  kind: 'deliver';
  job: PrintJobRow;
  printer: DeliveryPrinter;
  document?: Buffer | null;
}

type HandedOffRow = PrintJobRow & { printer_connection: string; printer_error: PrinterRow['error']; inline_document: Uint8Array | null };
const handedOff = (name: string, { printer_connection: connection, printer_error: error, inline_document: document, ...job }: HandedOffRow): HandedOff =>
  ({ kind: 'deliver', job, printer: { name, connection, error }, document: asBuffer(document) });

/**
 * The hand-off of the printer's head job in the case that needs no decision
 * in code (statements/claim-next.sql), under the dispatch lock the caller's
 * transaction holds (`token`, a run opening's, is written with the hand-off);
 * undefined when nothing was handed off (nothing changed).
 */
export async function claimHead(tx: Sql, printer: string, token?: string): Promise<HandedOff | undefined> {
  const { rows } = await tx.query<HandedOffRow>(CLAIM_NEXT, [printer, token ?? null]);
  return rows[0] && handedOff(printer, rows[0]);
}

/**
 * A run's opening in the common case (statements/open-run.sql, one
 * autocommitted statement; `token` is written with the hand-off): `next` the job handed off; else `drained` when
 * the dispatch lock was free, nothing was in flight and no job waited (the
 * run may end); else neither, and nothing changed: the caller opens the run
 * in a transaction (the lock waited for, what is in flight recovered, the
 * next step decided in code).
 */
export async function openRun(sql: Sql, printer: string, token: string): Promise<{ next?: HandedOff; drained: boolean }> {
  const { rows } = await sql.query<HandedOffRow & { locked: boolean; clear: boolean; drained: boolean }>(OPEN_RUN, [printer, token]);
  const { locked: _l, clear, drained, ...claimed } = rows[0]!;
  if (claimed.id) return { next: handedOff(printer, claimed as HandedOffRow), drained: false };
  return { drained: clear && drained };
}

/** One delivered job of `deliveredAndNextMany`: the job this run handed off, the device's answer, whether to write `last_printed`. */
export interface Delivered {
  job: PrintJobRow;
  message: string;
  touchPrinter: boolean;
}

/**
 * A delivered job's outcome: `delivered` false when its guard failed (an
 * operator or a recovery changed the job); `next`: the next hand-off, if
 * any; `drained`: no job of the printer was waiting (in the statement's
 * snapshot), so nothing was handed off because there was nothing to hand.
 */
export interface DeliveredAndNext {
  delivered: boolean;
  next?: HandedOff;
  drained: boolean;
}

/**
 * A delivered job's outcome and the printer's next hand-off as one
 * autocommitted statement (statements/delivered-and-next.sql: the dispatch
 * lock first, the outcome guarded by the hand-off, the next hand-off
 * re-checked on the newest rows). `next` undefined: nothing was handed off;
 * the caller decides step by step (claimNext). `handOff` false: the
 * outcome alone (a stopping worker takes nothing new).
 */
export async function deliveredAndNext(sql: Sql, job: PrintJobRow, message: string, touchPrinter: boolean, handOff = true): Promise<DeliveredAndNext> {
  const { rows } = await sql.query<HandedOffRow & { delivered: number; drained: boolean }>(handOff ? DELIVERED_AND_NEXT : DELIVERED_ONLY,
    [job.printer, job.id, job.seq, job.attempts, message, clip(`delivered: ${message}`), touchPrinter]);
  const { delivered, drained, ...claimed } = rows[0]!;
  return { delivered: delivered > 0, drained, next: claimed.id ? handedOff(job.printer, claimed as HandedOffRow) : undefined };
}

/**
 * `deliveredAndNext` for several printers in one autocommitted statement
 * (statements/delivered-and-next-many.sql), at most one entry per printer;
 * results in the order of `items`.
 */
export async function deliveredAndNextMany(sql: Sql, items: readonly Delivered[]): Promise<DeliveredAndNext[]> {
  if (new Set(items.map((d) => d.job.printer)).size !== items.length) throw new Error('deliveredAndNextMany: one entry per printer');
  const { rows } = await sql.query<HandedOffRow & { k: number; delivered: boolean; drained: boolean; was: unknown; had: unknown }>(DELIVERED_AND_NEXT_MANY,
    [items.map((d) => d.job.printer), items.map((d) => d.job.id), items.map((d) => d.job.seq), items.map((d) => d.job.attempts),
      items.map((d) => d.message), items.map((d) => clip(`delivered: ${d.message}`)), items.map((d) => d.touchPrinter)]);
  const out: DeliveredAndNext[] = items.map(() => ({ delivered: false, drained: false }));
  for (const { k, delivered, drained, was: _w, had: _h, ...claimed } of rows) {
    const item = items[Number(k) - 1]!;
    out[Number(k) - 1] = { delivered, drained, next: claimed.id ? handedOff(item.job.printer, claimed as HandedOffRow) : undefined };
  }
  return out;
}

/** The flow's output (and the intermediate files kept) of a job in preprocessing, and its page count when known. */
export async function setStages(tx: Sql, jobId: string, stages: JobStage[], pages: number | null): Promise<void> {
  await tx.query('UPDATE print_jobs SET stages = $2, pages = COALESCE($3, pages) WHERE id = $1', [jobId, JSON.stringify(stages), pages]);
}

/**
 * A redirect takes the printer's waiting jobs along (DESIGN.md section 7): each
 * goes to the back of the target's queue, remembers where it was sent, and
 * its log says so. Returns how many moved.
 */
export async function moveWaitingJobs(sql: Sql, from: string, to: string, by: string): Promise<number> {
  const { rows } = await sql.query<{ id: string }>(
    `UPDATE print_jobs SET printer = $2, redirected_from = COALESCE(redirected_from, printer), seq = nextval('print_jobs_seq'), updated = now()
     WHERE id IN (SELECT id FROM print_jobs WHERE printer = $1 AND status IN ${SQL_WAITING} ORDER BY priority DESC, seq FOR UPDATE)
     RETURNING id`, [from, to]);
  if (rows.length > 0) {
    await sql.query(
      `INSERT INTO print_logs (job_id, printer, level, text) SELECT unnest($1::bigint[]), $2, 'info', $3`,
      [rows.map((r) => r.id), to, `redirected from "${from}" to "${to}" by ${by}`]);
  }
  return rows.length;
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

/** The job, its log and its inline document (the document and stage blobs go with the next blob collection). */
export async function deleteJob(sql: Sql, id: number): Promise<void> {
  await sql.query('DELETE FROM print_jobs WHERE id = $1', [id]);
}

/** Housekeeping: jobs whose retention is over (statements/delete-expired.sql), at most `limit`; how many went. */
export async function deleteExpiredJobs(sql: Sql, defaults: RetentionDefaults, limit = 1000): Promise<number> {
  const { rowCount } = await sql.query(DELETE_EXPIRED, [defaults.processed, defaults.canceled, defaults.error, defaults.paused, limit]);
  return rowCount;
}

/**
 * A job of an earlier run of its task taken over by the task's new run (its
 * `task.run` set to `run`): the job's reports go to the item under that run.
 * An update of `task`, so migration 021's trigger asks for a report of the
 * job's state in this statement. Undefined when the job is gone.
 */
export async function adoptTaskJob(sql: Sql, id: string, run: number): Promise<PrintJobRow | undefined> {
  const { rows } = await sql.query<PrintJobRow>(
    `UPDATE print_jobs SET task = jsonb_set(task, '{run}', to_jsonb($2::int)), updated = now() WHERE id = $1 AND task ? 'run' RETURNING ${JOB_COLUMNS}`,
    [id, run]);
  return rows[0];
}
