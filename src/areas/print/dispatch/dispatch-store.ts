import { DISPATCH_LOCK_CLASS, JOB_COLUMNS, SQL_WAITING, waitingHeads, type PrintJobRow } from '../jobs/store/job-row.js';
import type { Sql } from '../../../storage/driver/database.js';

/**
 * The dispatch engine's reads. Every step that looks at or changes what is
 * in flight runs under the printer's dispatch lock, so two runs for one
 * printer (a duplicate after a lost BullMQ lock) take turns and never both
 * put a job in flight; a job in flight is a job in `preprocessing` or
 * `processing`.
 *
 * Nothing here changes a row: the engine changes jobs through the jobs
 * store (jobs/store/job-store.ts, the one writer of print_jobs, whose
 * hand-off and outcome statements it runs) and printers through the
 * printers store. These reads stay here rather than in the jobs store
 * because they are the engine's questions and part of its locking protocol
 * (which rows it locks FOR UPDATE under the dispatch lock before it decides
 * on them); no other module asks them.
 */

/**
 * The printer's dispatch lock: a transaction-scoped advisory lock keyed by
 * the printer's name, not its row lock, so submissions (which share-lock the
 * printer row) never queue behind a dispatch step or the other way round.
 * Two names with the same hash only take turns.
 */
export async function lockPrinterDispatch(tx: Sql, printer: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(${DISPATCH_LOCK_CLASS}, hashtext($1))`, [printer]);
}

/**
 * Makes the current transaction's commit asynchronous (no wait for the WAL
 * flush). Used for outcomes only: an outcome lost in a database crash leaves
 * the job in flight with its hand-off mark, which the next run turns into
 * "delivery uncertain": never a second delivery. The hand-off itself is
 * always committed synchronously.
 */
export async function relaxCommit(tx: Sql): Promise<void> {
  await tx.query('SET LOCAL synchronous_commit = off');
}

/** The printer's jobs in flight, locked (a run that died may have left them). */
export async function inFlightJobs(tx: Sql, printer: string): Promise<PrintJobRow[]> {
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ('preprocessing', 'processing') FOR UPDATE`, [printer]);
  return rows;
}

/**
 * The printer's head job (priority desc, then queue position), locked, with
 * how long until it is due (0: now); undefined when nothing waits.
 */
export async function headJob(tx: Sql, printer: string): Promise<(PrintJobRow & { due_in_ms: number }) | undefined> {
  const { rows } = await tx.query<PrintJobRow & { due_in_ms: number }>(
    `SELECT ${JOB_COLUMNS}, GREATEST(0, CEIL(EXTRACT(EPOCH FROM (next_attempt_at - now())) * 1000))::int AS due_in_ms
       FROM print_jobs WHERE id = (SELECT id FROM (${waitingHeads('$1')}) h ORDER BY priority DESC, seq LIMIT 1)
        AND status IN ${SQL_WAITING} FOR UPDATE`, [printer]);
  return rows[0];
}

/** The printer's waiting jobs in queue order, locked (a redirected printer hands them on). */
export async function waitingJobs(tx: Sql, printer: string): Promise<PrintJobRow[]> {
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ${SQL_WAITING} ORDER BY priority DESC, seq FOR UPDATE`, [printer]);
  return rows;
}

/**
 * The printer's one job in flight, when it was handed off by a run's opening
 * under one of `tokens` (`handoff_token`, open-run.sql) and nothing else is
 * in flight; locked. Undefined otherwise.
 */
export async function inFlightUnder(tx: Sql, printer: string, tokens: readonly string[]): Promise<PrintJobRow | undefined> {
  const rows = await inFlightJobs(tx, printer);
  const job = rows.length === 1 ? rows[0]! : undefined;
  return job && job.status === 'processing' && job.handoff_at !== null && job.handoff_token !== null && tokens.includes(job.handoff_token) ? job : undefined;
}

/** Locks a job that this run put in flight; undefined when an operator or a recovery changed it meanwhile. */
export async function lockInFlight(tx: Sql, job: PrintJobRow): Promise<PrintJobRow | undefined> {
  const { rows } = await tx.query<PrintJobRow>(`SELECT ${JOB_COLUMNS} FROM print_jobs WHERE id = $1 FOR UPDATE`, [job.id]);
  const now = rows[0];
  if (!now || now.status !== job.status || now.seq !== job.seq) return undefined;
  if (job.status === 'processing' && now.handoff_at?.getTime() !== job.handoff_at?.getTime()) return undefined;
  return now;
}

/**
 * Printers the database says have dispatch work (the reconciler's source):
 * waiting jobs ready now or jobs left in flight, on a printer that is not
 * held (or is redirected, so its jobs move on); each with the job blocking
 * its queue (in flight, else the head), what its dispatch is working on.
 */
export async function printersWithWork(sql: Sql, limit: number): Promise<{ printer: string; blocking: string }[]> {
  const { rows } = await sql.query<{ printer: string; blocking: string }>(
    `SELECT DISTINCT ON (j.printer) j.printer, j.id::text AS blocking FROM print_jobs j JOIN printers p ON p.name = j.printer
      WHERE (j.status IN ('waitpreprocessing', 'waitprocessing', 'preprocessing', 'processing')
             OR (j.status = 'postponed' AND j.next_attempt_at <= now()))
        AND (p.redirect IS NOT NULL OR (p.enabled AND NOT p.paused))
      ORDER BY j.printer, j.status IN ('preprocessing', 'processing') DESC, j.priority DESC, j.seq
      LIMIT $1`, [limit]);
  return rows;
}

/** The job blocking a printer's queue (in flight, else the head), locked, for `abandon`. */
export async function blockingJob(tx: Sql, printer: string): Promise<PrintJobRow | undefined> {
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ('preprocessing', 'processing', 'waitpreprocessing', 'waitprocessing', 'postponed')
      ORDER BY status IN ('preprocessing', 'processing') DESC, priority DESC, seq LIMIT 1 FOR UPDATE`, [printer]);
  return rows[0];
}

/** Which of the printers have waiting work ready now (the tail checks after runs found their queues empty), in one statement. */
export async function printersWithReadyWork(sql: Sql, printers: readonly string[]): Promise<string[]> {
  const { rows } = await sql.query<{ name: string }>(
    `SELECT p.name FROM printers p
      WHERE p.name = ANY($1::text[]) AND (p.redirect IS NOT NULL OR (p.enabled AND NOT p.paused))
        AND EXISTS (SELECT 1 FROM print_jobs j WHERE j.printer = p.name
          AND (j.status IN ('waitpreprocessing', 'waitprocessing') OR (j.status = 'postponed' AND j.next_attempt_at <= now())))`, [printers]);
  return rows.map((r) => r.name);
}

/**
 * Whether a job in delivery was canceled since its hand-off (or deleted,
 * which only a job out of `processing` can be): a backend that follows the
 * job at the device (IPP) then cancels it there. Asked by the delivery while
 * it runs, without a lock: a cancel is final, so a stale "no" only means
 * the next look sees it.
 */
export async function canceledInDelivery(sql: Sql, jobId: string): Promise<boolean> {
  const { rows } = await sql.query<{ status: string }>('SELECT status FROM print_jobs WHERE id = $1', [jobId]);
  return rows.length === 0 || rows[0]!.status === 'canceled';
}
