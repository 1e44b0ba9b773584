import { canJobMove } from '../jobs/job-states.js';
import { asBuffer, INLINE_DOCUMENT_OF, JOB_COLUMNS, jobColumns, transitionJob, type JobStage, type PrintJobRow } from '../jobs/store/job-store.js';
import { LOG_TEXT_MAX, logText, printLog } from '../jobs/print-log.js';
import { resolveRedirect, type PrinterRow } from '../printers/printer-store.js';
import type { Outbox } from '../../../outbox/outbox.js';
import type { Sql } from '../../../storage/driver/database.js';

/**
 * The dispatch engine's SQL. Every step that looks at or changes what is in
 * flight runs under the printer's dispatch lock, so two runs for one printer
 * (a duplicate after a lost BullMQ lock) take turns and never both put a job
 * in flight; a job in flight is a job in `preprocessing` or `processing`.
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
/** The first key of the two-key advisory lock: the dispatch engine's own class. */
const DISPATCH_LOCK_CLASS = 7209;

/** States a job waits in for the engine. */
const WAITING_STATES = ['waitpreprocessing', 'waitprocessing', 'postponed'] as const;
const WAITING = `(${WAITING_STATES.map((st) => `'${st}'`).join(', ')})`;

/** What the engine should do next for a printer. */
export type NextStep =
  | { kind: 'idle'; why: string }
  | { kind: 'wait'; delayMs: number; job: PrintJobRow }
  | { kind: 'preprocess'; job: PrintJobRow; printer: PrinterRow }
  /** `document`: the job's inline document read with the hand-off (null: it is in the blob store; absent: not read, see job-document.ts). */
  | { kind: 'deliver'; job: PrintJobRow; printer: DeliveryPrinter; document?: Buffer | null };

/** What a delivery needs of its printer: where it is, and whether it last reported an error. */
export type DeliveryPrinter = Pick<PrinterRow, 'name' | 'connection' | 'error'>;

/**
 * Jobs of the printer left in flight by a run that died: `processing` with
 * the hand-off marked becomes `error` ("delivery uncertain": the bytes may
 * have reached the device, so it is never sent again on its own);
 * `processing` without a mark and `preprocessing` go back to waiting.
 * Only call it for a printer whose dispatch job is the caller.
 */
export async function recoverInFlight(tx: Sql, printer: string): Promise<number> {
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ('preprocessing', 'processing') FOR UPDATE`, [printer]);
  for (const job of rows) {
    if (job.status === 'processing' && job.handoff_at) {
      await transitionJob(tx, job, 'error', {
        message: 'delivery uncertain',
        log: `delivery uncertain: handed to the device at ${job.handoff_at.toISOString()} without an acknowledgement (the worker stopped); not sent again, repeat the job to print it`,
        level: 'error',
        dispatch: { handoff: 'clear' },
      });
    } else {
      await transitionJob(tx, job, job.status === 'processing' ? 'waitprocessing' : 'waitpreprocessing', {
        log: `${job.status} interrupted before the hand-off (the worker stopped); queued again`, level: 'warning',
      });
    }
  }
  return rows.length;
}

/**
 * Takes the printer's next job (priority desc, then submission order) and
 * puts it in flight: into `preprocessing` when its flow has not run, else
 * into `processing` with the hand-off marked, committed by the caller before
 * the first byte goes out. A paused or disabled printer holds its queue; a
 * redirected one hands its waiting jobs on; a postponed head job not yet due
 * makes the printer wait.
 */
export async function claimNext(tx: Sql, outbox: Outbox, name: string, opts: { locked?: boolean } = {}): Promise<NextStep> {
  if (!opts.locked) await lockPrinterDispatch(tx, name);
  // the common case in one statement (the lock is held, so this statement's snapshot sees every earlier run's commit)
  const claimed = await claimHead(tx, name);
  if (claimed) return claimed;
  // the rest (held, redirected, empty, not yet due, flow to run): read and decided step by step
  const { rows: found } = await tx.query<PrinterRow>('SELECT * FROM printers WHERE name = $1', [name]);
  const printer = found[0];
  if (!printer) return { kind: 'idle', why: 'no such printer' };
  if (printer.redirect) {
    const moved = await redirectWaiting(tx, outbox, printer);
    return { kind: 'idle', why: `redirected to "${printer.redirect}" (${moved} waiting jobs moved)` };
  }
  if (!printer.enabled) return { kind: 'idle', why: 'disabled' };
  if (printer.paused) return { kind: 'idle', why: 'paused' };
  const { rows } = await tx.query<PrintJobRow & { due_in_ms: number }>(
    `SELECT ${JOB_COLUMNS}, GREATEST(0, CEIL(EXTRACT(EPOCH FROM (next_attempt_at - now())) * 1000))::int AS due_in_ms
       FROM print_jobs WHERE id = (SELECT id FROM (${WAITING_STATES.map((st) => head1(st)).join(' UNION ALL ')}) h ORDER BY priority DESC, seq LIMIT 1)
        AND status IN ${WAITING} FOR UPDATE`, [name]);
  const head = rows[0];
  if (!head) return { kind: 'idle', why: 'no waiting jobs' };
  if (head.status === 'postponed' && head.next_attempt_at && head.due_in_ms > 0) return { kind: 'wait', delayMs: head.due_in_ms, job: head };
  const needsFlow = head.flow !== null && !head.stages.some((st) => st.stage === 'preprocessed');
  if (needsFlow) {
    const job = await transitionJob(tx, head, 'preprocessing', { log: `${head.status} -> preprocessing (flow "${head.flow}")` });
    return { kind: 'preprocess', job, printer };
  }
  const job = await transitionJob(tx, head, 'processing', {
    log: `${head.status} -> processing: handed to ${printer.connection}${head.attempts > 0 ? ` (attempt ${head.attempts + 1})` : ''}`,
    dispatch: { handoff: 'set', attempt: true },
  });
  return { kind: 'deliver', job, printer };
}

/** Waiting states a job is handed to the device from (JOB_TRANSITIONS: those that may become `processing`). */
const DELIVERABLE = `(${WAITING_STATES.filter((st) => canJobMove(st, 'processing')).map((st) => `'${st}'`).join(', ')})`;
if (!canJobMove('processing', 'processed')) throw new Error('JOB_TRANSITIONS no longer lets a delivered job become processed');

/**
 * The hand-off of the printer's next job as common table expressions, for
 * the case that needs no decision in code: the printer (`$1`) is enabled, not
 * paused, not redirected, and its head job is due and needs no flow. Picks the
 * head like claimNext, marks the hand-off (state `processing`, `handoff_at`,
 * one more attempt) and writes its log line. `after` is a condition evaluated
 * before any row is read or locked (the dispatch lock taken in the same
 * statement). Yields `c` (the claimed job, or no row) and `p` (its printer).
 */
const claimCtes = (after = 'true') => `p AS (SELECT name, connection, error FROM printers
       WHERE name = $1 AND redirect IS NULL AND enabled AND NOT paused AND ${after}),
     h AS (SELECT id, status, attempts FROM print_jobs
       WHERE id = (SELECT id FROM (${WAITING_STATES.map((st) => head1(st)).join(' UNION ALL ')}) h ORDER BY priority DESC, seq LIMIT 1)
         AND status IN ${WAITING} AND ${after} FOR UPDATE),
     c AS (UPDATE print_jobs j SET status = 'processing', updated = now(), handoff_at = now(), attempts = j.attempts + 1
       FROM h, p
       WHERE j.id = h.id AND h.status IN ${DELIVERABLE}
         AND NOT (h.status = 'postponed' AND j.next_attempt_at > now())
         AND (j.flow IS NULL OR j.stages @> '[{"stage": "preprocessed"}]'::jsonb)
       RETURNING ${jobColumns('j')}),
     cl AS (INSERT INTO print_logs (job_id, printer, level, text)
       SELECT c.id, c.printer, 'info', left(h.status || ' -> processing: handed to ' || p.connection
         || CASE WHEN h.attempts > 0 THEN ' (attempt ' || (h.attempts + 1) || ')' ELSE '' END, ${LOG_TEXT_MAX}) FROM c, h, p)`;
type ClaimedRow = PrintJobRow & { printer_connection: string; printer_error: PrinterRow['error']; inline_document: Uint8Array | null };
/** The handed-off job, its printer and its inline document (a small one, stored with the job: one round trip less per delivery). */
const CLAIMED_COLUMNS = `c.*, p.connection AS printer_connection, p.error AS printer_error, ${INLINE_DOCUMENT_OF('c.id')} AS inline_document`;
const deliverStep = (name: string, { printer_connection: connection, printer_error: error, inline_document: document, ...job }: ClaimedRow): NextStep =>
  ({ kind: 'deliver', job, printer: { name, connection, error }, document: asBuffer(document) });

/** claimCtes alone, under the dispatch lock taken by an earlier statement of the transaction; undefined when nothing was handed off (nothing changed). */
async function claimHead(tx: Sql, name: string): Promise<NextStep | undefined> {
  const { rows } = await tx.query<ClaimedRow>(`WITH ${claimCtes()} SELECT ${CLAIMED_COLUMNS} FROM c, p`, [name]);
  return rows[0] && deliverStep(name, rows[0]);
}

/**
 * The head of one waiting state straight from the (printer, status, priority
 * DESC, seq) index; the best of the three is the printer's head: no sort of
 * the whole queue, however long it is.
 */
const head1 = (status: string, printer = '$1') => `(SELECT id, priority, seq FROM print_jobs WHERE printer = ${printer} AND status = '${status}' ORDER BY priority DESC, seq LIMIT 1)`;

/**
 * A delivered job's outcome and the printer's next hand-off as one
 * autocommitted statement (one round trip per job; its commit is synchronous,
 * so the hand-off is durable before the caller sends a byte). It takes the
 * printer's dispatch lock first; moves the job this run handed off to
 * `processed`, guarded by that hand-off (still `processing` with the same
 * queue position and attempt: every hand-off counts an attempt and only a
 * requeue, which renews `seq`, resets it), clears the mark, drops its stage
 * files unless kept, writes its log line and, with `touchPrinter`, the
 * printer's `last_printed`; then hands off the next job (claimCtes).
 *
 * The statement reads with a snapshot from its start, before a wait for the
 * lock, so every decision that matters is re-checked on the rows it locks:
 * the outcome's guard and the head's waiting state are evaluated again on
 * the newest row version (a job another run took or changed meanwhile is
 * left alone, so no job is handed off twice).
 * `delivered` false: the guard failed (an operator or a recovery changed the
 * job). `next` undefined: nothing was handed off; the caller decides step by
 * step (claimNext).
 */
export async function deliveredAndNext(sql: Sql, job: PrintJobRow, message: string, touchPrinter: boolean): Promise<{ delivered: boolean; next?: NextStep }> {
  const { rows } = await sql.query<ClaimedRow & { delivered: number }>(
    `WITH lk AS (SELECT true AS locked FROM (SELECT pg_advisory_xact_lock(${DISPATCH_LOCK_CLASS}, hashtext($1))) x),
     u AS (UPDATE print_jobs SET status = 'processed', updated = now(), finished = now(), message = $5, handoff_at = NULL,
         stages = CASE WHEN keep_tempfiles THEN stages ELSE '[]'::jsonb END
       WHERE id = $2 AND (status, seq, attempts, handoff_at IS NOT NULL) IS NOT DISTINCT FROM ('processing', $3::bigint, $4::int, true)
         AND (SELECT locked FROM lk)
       RETURNING id, printer),
     ul AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', $6 FROM u),
     d AS (UPDATE printers SET last_printed = now(), error = NULL
       WHERE name = $1 AND $7::boolean AND EXISTS (SELECT 1 FROM u)
         AND (last_printed IS NULL OR last_printed < now() - interval '1 second' OR error IS NOT NULL)),
     ${claimCtes('(SELECT locked FROM lk)')}
     SELECT (SELECT count(*) FROM u)::int AS delivered, n.* FROM lk LEFT JOIN (SELECT ${CLAIMED_COLUMNS} FROM c, p) n ON true`,
    [job.printer, job.id, job.seq, job.attempts, message, logText(`delivered: ${message}`), touchPrinter]);
  const { delivered, ...claimed } = rows[0]!;
  return { delivered: delivered > 0, next: claimed.id ? deliverStep(job.printer, claimed as ClaimedRow) : undefined };
}

/** One delivered job of `deliveredAndNextMany`: the job this run handed off, the device's answer, whether to write `last_printed`. */
export interface Delivered {
  job: PrintJobRow;
  message: string;
  touchPrinter: boolean;
}

/**
 * `deliveredAndNext` for several printers in one autocommitted statement
 * (one round trip, one commit, one executor start for all of them; still
 * committed synchronously before the caller sends a byte). At most one entry
 * per printer. The dispatch locks are taken first, in the order of their
 * keys, so two such statements never wait for each other in a cycle; then,
 * per printer, the same guarded outcome, log line, throttled `last_printed`
 * and hand-off of the head job as `deliveredAndNext`, with the same
 * re-checks on the newest row versions. Results in the order of `items`.
 */
export async function deliveredAndNextMany(sql: Sql, items: readonly Delivered[]): Promise<{ delivered: boolean; next?: NextStep }[]> {
  if (new Set(items.map((d) => d.job.printer)).size !== items.length) throw new Error('deliveredAndNextMany: one entry per printer');
  const { rows } = await sql.query<ClaimedRow & { k: number; delivered: boolean }>(
    `WITH i AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::boolean[])
         WITH ORDINALITY AS i(printer, id, seq, attempts, message, log, touch, k)),
     lk AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(${DISPATCH_LOCK_CLASS}, key)) IS NOT NULL AS locked
       FROM (SELECT DISTINCT hashtext(printer) AS key FROM i ORDER BY key) x),
     u AS (UPDATE print_jobs j SET status = 'processed', updated = now(), finished = now(), message = i.message, handoff_at = NULL,
         stages = CASE WHEN j.keep_tempfiles THEN j.stages ELSE '[]'::jsonb END
       FROM i
       -- the jobs by primary key (= ANY: so no generic plan made while print_jobs was small settles on a
       -- sequential scan, docs/benchmarks.md, stop 18), the rest of the guard unindexed (architecture.md)
       WHERE j.id = ANY($2::bigint[]) AND j.id = i.id
         AND (j.status, j.seq, j.attempts, j.handoff_at IS NOT NULL) IS NOT DISTINCT FROM ('processing', i.seq, i.attempts, true)
         AND (SELECT locked FROM lk)
       RETURNING j.id, j.printer, i.log, i.touch),
     ul AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', log FROM u),
     d AS (UPDATE printers SET last_printed = now(), error = NULL
       WHERE name IN (SELECT name FROM printers WHERE name IN (SELECT printer FROM u WHERE touch)
           AND (last_printed IS NULL OR last_printed < now() - interval '1 second' OR error IS NOT NULL)
           -- in name order, as a batch of submissions share-locks them (insertJobsStatement): no cycle of waits
           ORDER BY name FOR NO KEY UPDATE)
         AND (last_printed IS NULL OR last_printed < now() - interval '1 second' OR error IS NOT NULL)),
     p AS (SELECT name, connection, error FROM printers
       WHERE name IN (SELECT printer FROM i) AND redirect IS NULL AND enabled AND NOT paused AND (SELECT locked FROM lk)),
     h AS (SELECT j.id, j.status, j.attempts FROM p
       CROSS JOIN LATERAL (SELECT id FROM (${WAITING_STATES.map((st) => head1(st, 'p.name')).join(' UNION ALL ')}) hd ORDER BY priority DESC, seq LIMIT 1) hd
       JOIN print_jobs j ON j.id = hd.id
       WHERE j.status IN ${WAITING} AND (SELECT locked FROM lk) FOR UPDATE OF j),
     c AS (UPDATE print_jobs j SET status = 'processing', updated = now(), handoff_at = now(), attempts = j.attempts + 1
       FROM h
       WHERE j.id = h.id AND h.status IN ${DELIVERABLE}
         AND NOT (h.status = 'postponed' AND j.next_attempt_at > now())
         AND (j.flow IS NULL OR j.stages @> '[{"stage": "preprocessed"}]'::jsonb)
       RETURNING ${jobColumns('j')}, h.status AS was, h.attempts AS had),
     cl AS (INSERT INTO print_logs (job_id, printer, level, text)
       SELECT c.id, c.printer, 'info', left(c.was || ' -> processing: handed to ' || p.connection
         || CASE WHEN c.had > 0 THEN ' (attempt ' || (c.had + 1) || ')' ELSE '' END, ${LOG_TEXT_MAX}) FROM c JOIN p ON p.name = c.printer)
     SELECT i.k, EXISTS (SELECT 1 FROM u WHERE u.id = i.id) AS delivered, n.*
       FROM i LEFT JOIN (SELECT ${CLAIMED_COLUMNS} FROM c JOIN p ON p.name = c.printer) n ON n.printer = i.printer
       WHERE (SELECT locked FROM lk)`,
    [items.map((d) => d.job.printer), items.map((d) => d.job.id), items.map((d) => d.job.seq), items.map((d) => d.job.attempts),
      items.map((d) => d.message), items.map((d) => logText(`delivered: ${d.message}`)), items.map((d) => d.touchPrinter)]);
  const out: { delivered: boolean; next?: NextStep }[] = items.map(() => ({ delivered: false }));
  for (const { k, delivered, was: _w, had: _h, ...claimed } of rows as (ClaimedRow & { k: number; delivered: boolean; was: unknown; had: unknown })[]) {
    const item = items[Number(k) - 1]!;
    out[Number(k) - 1] = { delivered, next: claimed.id ? deliverStep(item.job.printer, claimed as ClaimedRow) : undefined };
  }
  return out;
}

/** Moves a redirected printer's waiting jobs to the end of its redirect chain, in their order, and wakes that printer. */
async function redirectWaiting(tx: Sql, outbox: Outbox, printer: PrinterRow): Promise<number> {
  const target = await resolveRedirect(tx, printer.name);
  if (target === printer.name) return 0;
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ${WAITING} ORDER BY priority DESC, seq FOR UPDATE`, [printer.name]);
  for (const job of rows) {
    await transitionJob(tx, job, job.status === 'postponed' ? 'waitprocessing' : job.status, {
      log: `redirected from "${printer.name}" to "${target}"`,
      set: { printer: target, redirectedFrom: job.redirected_from ?? printer.name, requeue: true, resetAttempts: true },
    });
  }
  if (rows.length > 0) await outbox.add(tx, 'print.dispatch', { printer: target });
  return rows.length;
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

/** Locks a job that this run put in flight; undefined when an operator or a recovery changed it meanwhile. */
export async function lockInFlight(tx: Sql, job: PrintJobRow): Promise<PrintJobRow | undefined> {
  const { rows } = await tx.query<PrintJobRow>(`SELECT ${JOB_COLUMNS} FROM print_jobs WHERE id = $1 FOR UPDATE`, [job.id]);
  const now = rows[0];
  if (!now || now.status !== job.status || now.seq !== job.seq) return undefined;
  if (job.status === 'processing' && now.handoff_at?.getTime() !== job.handoff_at?.getTime()) return undefined;
  return now;
}

export async function setStages(tx: Sql, jobId: string, stages: JobStage[], pages: number | null): Promise<void> {
  await tx.query('UPDATE print_jobs SET stages = $2, pages = COALESCE($3, pages) WHERE id = $1', [jobId, JSON.stringify(stages), pages]);
}

/** The printer's runtime after a delivery: when it last printed, or the device error it reported (cleared on success). */
export async function recordDevice(tx: Sql, printer: string, outcome: { printed: true } | { error: string }): Promise<void> {
  if ('printed' in outcome) {
    // at most once a second per printer: a busy printer's row is not rewritten for every job
    await tx.query(`UPDATE printers SET last_printed = now(), error = NULL
      WHERE name = $1 AND (last_printed IS NULL OR last_printed < now() - interval '1 second' OR error IS NOT NULL)`, [printer]);
  } else {
    await tx.query(`UPDATE printers SET error = jsonb_build_object('message', $2::text, 'at', now()) WHERE name = $1`, [printer, outcome.error.slice(0, 1000)]);
    await printLog(tx, { printer, level: 'warning', text: outcome.error });
  }
}

export async function flowSteps(sql: Sql, name: string): Promise<unknown[] | undefined> {
  const { rows } = await sql.query<{ steps: unknown[] }>('SELECT steps FROM print_flows WHERE name = $1', [name]);
  return rows[0]?.steps;
}

/**
 * Printers the database says have dispatch work (the reconciler's source):
 * waiting jobs ready now or jobs left in flight, on a printer that is not
 * held (or is redirected, so its jobs move on).
 */
export async function printersWithWork(sql: Sql, limit: number): Promise<string[]> {
  const { rows } = await sql.query<{ printer: string }>(
    `SELECT DISTINCT j.printer FROM print_jobs j JOIN printers p ON p.name = j.printer
      WHERE (j.status IN ('waitpreprocessing', 'waitprocessing', 'preprocessing', 'processing')
             OR (j.status = 'postponed' AND j.next_attempt_at <= now()))
        AND (p.redirect IS NOT NULL OR (p.enabled AND NOT p.paused))
      LIMIT $1`, [limit]);
  return rows.map((r) => r.printer);
}

/** The job blocking a printer's queue (in flight, else the head), for `abandon`. */
export async function blockingJob(tx: Sql, printer: string): Promise<PrintJobRow | undefined> {
  const { rows } = await tx.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE printer = $1 AND status IN ('preprocessing', 'processing', 'waitpreprocessing', 'waitprocessing', 'postponed')
      ORDER BY status IN ('preprocessing', 'processing') DESC, priority DESC, seq LIMIT 1 FOR UPDATE`, [printer]);
  return rows[0];
}

/** Whether a printer has waiting work ready now (the tail check after a run found its queue empty). */
export async function hasReadyWork(sql: Sql, printer: string): Promise<boolean> {
  return (await printersWithWorkFor(sql, printer)) > 0;
}
async function printersWithWorkFor(sql: Sql, printer: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM print_jobs j JOIN printers p ON p.name = j.printer
      WHERE j.printer = $1 AND (j.status IN ('waitpreprocessing', 'waitprocessing') OR (j.status = 'postponed' AND j.next_attempt_at <= now()))
        AND (p.redirect IS NOT NULL OR (p.enabled AND NOT p.paused)) LIMIT 1) x`, [printer]);
  return rows[0]!.n;
}
