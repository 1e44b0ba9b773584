import type { Outbox } from '../../../outbox/outbox.js';
import type { Sql } from '../../../storage/driver/database.js';
import { handoffTarget, type PrintJobRow } from '../jobs/store/job-row.js';
import { claimHead, transitionJob, type HandedOff } from '../jobs/store/job-store.js';
import { getPrinter, resolveRedirect, type PrinterRow } from '../printers/printer-store.js';
import { headJob, inFlightJobs, lockPrinterDispatch, waitingJobs } from './dispatch-store.js';

/** What the engine should do next for a printer (`deliver`: a job handed off, jobs/store/job-store.ts `HandedOff`). */
export type NextStep =
  | { kind: 'idle'; why: string }
  | { kind: 'wait'; delayMs: number; job: PrintJobRow }
  | { kind: 'preprocess'; job: PrintJobRow; printer: PrinterRow }
  | HandedOff;

/**
 * Jobs of the printer left in flight by a run that died: `processing` with
 * the hand-off marked becomes `error` ("delivery uncertain": the bytes may
 * have reached the device, so it is never sent again on its own);
 * `processing` without a mark and `preprocessing` go back to waiting.
 * Only call it for a printer whose dispatch job is the caller, under its
 * dispatch lock.
 */
export async function recoverInFlight(tx: Sql, printer: string): Promise<number> {
  const rows = await inFlightJobs(tx, printer);
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
export async function claimNext(tx: Sql, outbox: Outbox, name: string, opts: { locked?: boolean; token?: string } = {}): Promise<NextStep> {
  if (!opts.locked) await lockPrinterDispatch(tx, name);
  // the common case in one statement (the lock is held, so this statement's snapshot sees every earlier run's commit)
  const claimed = await claimHead(tx, name, opts.token);
  if (claimed) return claimed;
  // the rest (held, redirected, empty, not yet due, flow to run): read and decided step by step
  const printer = await getPrinter(tx, name);
  if (!printer) return { kind: 'idle', why: 'no such printer' };
  if (printer.redirect) {
    const moved = await redirectWaiting(tx, outbox, printer);
    return { kind: 'idle', why: `redirected to "${printer.redirect}" (${moved} waiting jobs moved)` };
  }
  if (!printer.enabled) return { kind: 'idle', why: 'disabled' };
  if (printer.paused) return { kind: 'idle', why: 'paused' };
  const head = await headJob(tx, name);
  if (!head) return { kind: 'idle', why: 'no waiting jobs' };
  if (head.status === 'postponed' && head.next_attempt_at && head.due_in_ms > 0) return { kind: 'wait', delayMs: head.due_in_ms, job: head };
  const needsFlow = head.flow !== null && !head.stages.some((st) => st.stage === 'preprocessed');
  if (needsFlow) {
    const job = await transitionJob(tx, head, 'preprocessing', { log: `${head.status} -> preprocessing (flow "${head.flow}")` });
    return { kind: 'preprocess', job, printer };
  }
  const job = await transitionJob(tx, head, 'processing', {
    log: `${head.status} -> processing: handed to ${handoffTarget(printer.connection)}${head.attempts > 0 ? ` (attempt ${head.attempts + 1})` : ''}`,
    dispatch: { handoff: 'set', attempt: true },
  });
  return { kind: 'deliver', job, printer };
}

/** Moves a redirected printer's waiting jobs to the end of its redirect chain, in their order, and wakes that printer. */
async function redirectWaiting(tx: Sql, outbox: Outbox, printer: PrinterRow): Promise<number> {
  const target = await resolveRedirect(tx, printer.name);
  if (target === printer.name) return 0;
  const rows = await waitingJobs(tx, printer.name);
  for (const job of rows) {
    await transitionJob(tx, job, job.status === 'postponed' ? 'waitprocessing' : job.status, {
      log: `redirected from "${printer.name}" to "${target}"`,
      set: { printer: target, redirectedFrom: job.redirected_from ?? printer.name, requeue: true, resetAttempts: true },
    });
  }
  if (rows.length > 0) await outbox.add(tx, 'print.dispatch', { printer: target });
  return rows.length;
}
