import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import type { BlobStore } from '../../../blobs/blob-store.js';
import { PrintDeliveryError, type Acknowledgement, type DeliveryWatch, type PrintBackendContext } from '../../../connectors/print-backends/print-backend.js';
import { printBackendFor } from '../../../connectors/print-backends/registry.js';
import { AppError } from '../../../errors/app-error.js';
import { isDatabaseUnreachable } from '../../../errors/resource-errors.js';
import { jobDocumentFile, openJobDocument } from '../jobs/job-document.js';
import type { JobStage, PrintJobRow } from '../jobs/store/job-row.js';
import { deliveredAndNext, openRun, printLog, printLogAboutJob, setStages, transitionJob, type DeliveryPrinter } from '../jobs/store/job-store.js';
import type { Logger } from '../../../logging/logger.js';
import type { Outbox } from '../../../outbox/outbox.js';
import { RunAgainError, type JobContext } from '../../../queue/jobs.js';
import type { Database, Sql } from '../../../storage/driver/database.js';
import { flowSteps } from '../flows/flow-store.js';
import { runFlow } from '../flows/run-flow.js';
import { getPrinter, recordDeviceError } from '../printers/printer-store.js';
import { OutcomeBatcher, type OutcomeBatching } from './outcome-batcher.js';
import { pageInfo } from '../documents/page-info.js';
import { claimNext, recoverInFlight, type NextStep } from './claim.js';
import { canceledInDelivery, inFlightJobs, inFlightUnder, lockInFlight, lockPrinterDispatch, printersWithReadyWork, relaxCommit } from './dispatch-store.js';

export interface DispatcherDeps {
  db: Database;
  blobs: BlobStore;
  outbox: Outbox;
  log: Logger;
  /** Where flows write their stage files (one temporary directory per job). */
  workDir: string;
  retry: { baseMs: number; maxMs: number };
  /** How long an outcome the database does not take is kept and written again (config `printDispatch.outcomeRetryMs`); 0: not at all. */
  outcomeRetryMs?: number;
  backend: Omit<PrintBackendContext, 'log'>;
  /** How the outcome statements of this process are gathered (OutcomeBatcher). */
  outcomes: OutcomeBatching;
  /** Wakes a printer's dispatch again after a run ended (the tail check); the queue in production. */
  wake(printer: string): Promise<unknown>;
  /**
   * Aborted when the process's workers have stopped: pending tail checks are
   * cancelled and none is scheduled any more (the database is about to close;
   * the reconciler of the next start catches up).
   */
  stopped?: AbortSignal;
  /**
   * Aborted when the process begins to stop: a run finishes the hand-off in
   * progress (its outcome recorded), claims nothing new, and ends with its
   * BullMQ job queued again for the next worker. Only the job's own signal,
   * aborted when the shutdown grace is over, cuts a delivery short.
   */
  stopping?: AbortSignal;
}

/** A run's step: the claim's answer, or `stop` (the worker is stopping: take nothing new). */
type Step = NextStep | { kind: 'stop' };
const STOP: Step = { kind: 'stop' };

/** Wait before the n-th retry of a postponed job: base, 2 base, 4 base, ... up to max. */
export const backoffMs = (attempts: number, retry: { baseMs: number; maxMs: number }) =>
  Math.min(retry.maxMs, retry.baseMs * 2 ** Math.min(30, Math.max(0, attempts - 1)));

/** How soon a run left by a stopping worker may be taken by another (the printer's jobs wait meanwhile). */
const STOP_RETRY_MS = 100;
/** Longest pause (before jitter) between runs of a printer that cannot reach the database. */
const UNREACHABLE_RETRY_MAX_MS = 5000;
/** Tokens of lost openings kept per printer (each failed opening adds one; the next opening that answers uses them). */
const UNSENT_OPENINGS_KEPT = 8;

/** How long after a run found its queue empty it looks once more (a job committed while the run was ending). */
const TAIL_CHECK_MS = 250;
/** Tail checks due in the same slice of this length go together, as one statement. */
const TAIL_SLICE_MS = 50;

/**
 * The `print.dispatch { printer }` handler: drains one printer's queue, one
 * job in flight at a time (DESIGN.md section 7). One BullMQ job per printer
 * (its id is derived from the name), so thousands of printers share one
 * queue and a handful of workers; each run takes the next job under the
 * printer's dispatch lock, runs its flow, hands it to the backend and records the
 * outcome, until the queue is empty, held (paused, disabled, redirected) or
 * the printer is unreachable (then the run is delayed until the head job is
 * due: `RunAgainError`). A run opens with one statement when the lock is
 * free and nothing is in flight (`openRun`), else with a transaction that
 * waits for the lock and recovers what a stopped run left in flight.
 *
 * At most once: the hand-off is committed (`handoff_at`, state `processing`)
 * before the first byte goes out; a job found in flight with that mark by a
 * later run was interrupted between hand-off and acknowledgement and ends in
 * `error` "delivery uncertain" instead of being sent again.
 */
/** A run that found a job in flight after a write tried again, and no longer holds its BullMQ lock: another run has the printer. */
class LockLostError extends Error {
  override readonly name = 'LockLostError';
  constructor(printer: string, job: string) {
    super(`dispatch of printer "${printer}" was taken over by another run; job ${job} in flight is that run's, not delivered here`);
  }
}

export class Dispatcher {
  /** When this process last wrote each printer's `last_printed` (a busy printer's row is written at most once a second). */
  private readonly lastPrintedWritten = new Map<string, number>();
  /** Tokens of this process's run openings per printer whose answer was lost (`unsentOpening`). */
  private readonly unsentOpenings = new Map<string, string[]>();
  /** Runs of each printer in a row that failed because the database could not be reached (their backoff). */
  private readonly unreachable = new Map<string, number>();
  /** The printers' acknowledged deliveries and next hand-offs, several printers to a statement when they come together. */
  private readonly outcomes: OutcomeBatcher;

  /** Tail checks scheduled and not yet fired, by the time their slice fires (cancelled when `deps.stopped` aborts). */
  private readonly tailChecks = new Map<number, { printers: Set<string>; timer: NodeJS.Timeout }>();

  constructor(private readonly deps: DispatcherDeps) {
    this.outcomes = new OutcomeBatcher(deps.db, deps.outcomes);
    deps.stopped?.addEventListener('abort', () => {
      for (const { timer } of this.tailChecks.values()) clearTimeout(timer);
      this.tailChecks.clear();
    }, { once: true });
  }

  /**
   * One dispatch run of `printer`. A run that fails because the database
   * cannot be reached from here spends none of its BullMQ job's attempts: it
   * runs again later (`RunAgainError`, backoff 250 ms doubling to 5 s per
   * printer, with jitter). The attempts are for faults of the run itself; a
   * worker cut off from the database would otherwise take the job back at
   * each retry, fail it at once and spend them all, and the printer would
   * stop until the reconciler's next pass, while a worker that reaches the
   * database could print (seen with a network cut lasting the whole takeover:
   * test/areas/print/dispatch/dispatch-takeover). What the failed run left in
   * flight is the next run's to recover, as after any failure.
   */
  async run(printer: string, ctx: Pick<JobContext, 'signal' | 'holdsLock'>): Promise<void> {
    try {
      await this.runSteps(printer, ctx);
      this.unreachable.delete(printer);
    } catch (err) {
      const databaseAway = !(err instanceof RunAgainError || err instanceof LockLostError) && !ctx.signal.aborted && isDatabaseUnreachable(err);
      if (!databaseAway) {
        this.unreachable.delete(printer);
        throw err;
      }
      const n = (this.unreachable.get(printer) ?? 0) + 1;
      this.unreachable.set(printer, n);
      const delay = Math.round(Math.min(250 * 2 ** (n - 1), UNREACHABLE_RETRY_MAX_MS) * (0.5 + Math.random()));
      this.deps.log.warn({ err, printer, failures: n }, `dispatch of printer "${printer}" cannot reach the database; run again in ${delay} ms (no attempt spent)`);
      throw new RunAgainError(delay, `printer "${printer}": the database cannot be reached; run again in ${delay} ms`, { localFault: true });
    }
  }

  private async runSteps(printer: string, ctx: Pick<JobContext, 'signal' | 'holdsLock'>): Promise<void> {
    const owns = ctx.holdsLock ? () => ctx.holdsLock!() : async () => true;
    const { db, outbox } = this.deps;
    const stopping = () => this.deps.stopping?.aborted === true;
    if (stopping()) throw this.stopError(printer);
    // the common case in one statement: the lock free, nothing in flight, the head handed off or nothing waiting
    const unsent = this.unsentOpenings.get(printer) ?? [];
    this.unsentOpenings.delete(printer);
    const token = randomUUID();
    const opened = await openRun(db, printer, token).catch((err: unknown) => this.openingFailed(printer, [...unsent, token], err));
    let step: Step = opened.next ?? (opened.drained ? { kind: 'idle', why: 'no waiting jobs' } : await db.transaction(async (tx) => {
      // serialises with any other run for this printer before looking at what is in flight
      await lockPrinterDispatch(tx, printer);
      const mine = unsent.length > 0 ? await this.unsentOpening(tx, printer, unsent) : undefined;
      if (mine) return mine;
      const n = await recoverInFlight(tx, printer);
      if (n > 0) this.deps.log.warn({ printer, jobs: n }, 'dispatch found jobs left in flight by a stopped worker');
      return claimNext(tx, outbox, printer, { locked: true, token });
    }).catch((err: unknown) => this.openingFailed(printer, [...unsent, token], err)));
    for (;;) {
      if (ctx.signal.aborted) {
        if (step.kind === 'deliver' || step.kind === 'preprocess') await this.release(step.job);
        ctx.signal.throwIfAborted();
      }
      // stopping: a job claimed and not yet started is released (nothing was sent), and the run ends
      if (stopping() && (step.kind === 'deliver' || step.kind === 'preprocess')) {
        await this.release(step.job);
        step = STOP;
      }
      switch (step.kind) {
        case 'stop':
          throw this.stopError(printer);
        case 'idle':
          this.tailCheck(printer);
          return;
        case 'wait':
          throw new RunAgainError(step.delayMs, `printer "${printer}" waits ${step.delayMs} ms for job ${step.job.id}`);
        case 'preprocess':
          await this.preprocess(step.job, ctx.signal);
          step = stopping() ? STOP : await this.claimStepByStep(printer, ctx.signal, owns, step.job, false, true);
          break;
        case 'deliver': {
          const after = await this.deliver(step.job, step.printer, ctx.signal, owns, step.document);
          if ('retryInMs' in after) throw new RunAgainError(after.retryInMs, `printer "${printer}" unreachable; job ${step.job.id} retried in ${after.retryInMs} ms`);
          step = after.next;
          break;
        }
      }
    }
  }

  /**
   * A job claimed but not started when the run has to stop (shutdown):
   * nothing left, so it waits again, due at once (a job taken for its flow
   * goes back to waiting for it).
   */
  private async release(job: PrintJobRow): Promise<void> {
    await this.deps.db.transaction(async (tx) => {
      const now = await lockInFlight(tx, job);
      if (!now) return;
      if (now.status === 'preprocessing') await transitionJob(tx, now, 'waitpreprocessing', { log: 'released before its flow ran (the worker is stopping)', level: 'warning' });
      else await transitionJob(tx, now, 'postponed', { log: 'released before sending (the worker is stopping)', dispatch: { handoff: 'clear', retryInMs: 0 } });
    });
  }

  /** How a run ends when its worker stops: its BullMQ job waits again (not a failure), for the next worker to carry on. */
  private stopError(printer: string): RunAgainError {
    return new RunAgainError(STOP_RETRY_MS, `printer "${printer}": the worker is stopping; the rest is left for the next worker`);
  }

  /**
   * The run is ending with nothing to do; a job committed in the last
   * moments found this printer's dispatch job still active, so its wake-up
   * was dropped as a duplicate. Look once more shortly after the run has
   * completed (the reconciler is the backstop if this process dies first):
   * 250 to 300 ms later, with the other printers whose look falls in the
   * same 50 ms slice, in one statement.
   */
  private tailCheck(printer: string): void {
    if (this.deps.stopped?.aborted) return;
    const at = Math.ceil((Date.now() + TAIL_CHECK_MS) / TAIL_SLICE_MS) * TAIL_SLICE_MS;
    const slice = this.tailChecks.get(at);
    if (slice) {
      slice.printers.add(printer);
      return;
    }
    const printers = new Set([printer]);
    const timer = setTimeout(() => {
      this.tailChecks.delete(at);
      void printersWithReadyWork(this.deps.db, [...printers])
        .then((ready) => Promise.all(ready.map((p) => this.deps.wake(p))))
        .catch((err: unknown) => this.deps.log.warn({ err, printers: [...printers] }, 'dispatch tail check failed; the reconciler will catch up'));
    }, at - Date.now()).unref();
    this.tailChecks.set(at, { printers, timer });
  }

  /** Runs the job's flow into stage files, stores them as blobs, and queues the job for printing; a failing flow ends it in error. */
  private async preprocess(job: PrintJobRow, signal: AbortSignal): Promise<void> {
    const { db, blobs } = this.deps;
    await mkdir(this.deps.workDir, { recursive: true });
    const work = await mkdtemp(path.join(this.deps.workDir, `job-${job.id}-`));
    try {
      let stages: JobStage[] = [];
      let pages: number | null = null;
      let failure: string | undefined;
      try {
        const steps = await flowSteps(db, job.flow!);
        if (!steps) throw new AppError('FLOW_FAILED', `flow "${job.flow}" no longer exists`);
        const result = await runFlow(steps, await jobDocumentFile(db, blobs, job, work), work, { keepStages: job.keep_tempfiles, signal });
        const created = new Date().toISOString();
        for (const st of result.stages) {
          if (st.path === result.output) continue;
          const blob = await blobs.put(createReadStream(st.path));
          stages.push({ stage: `step-${st.step}-${st.use}`, sha256: blob.sha256, size: blob.size, mimeType: 'application/pdf', created });
        }
        const out = await blobs.put(createReadStream(result.output));
        const isPdf = result.stages.length > 0;
        stages.push({ stage: 'preprocessed', sha256: out.sha256, size: out.size, mimeType: isPdf ? 'application/pdf' : job.mime_type, created });
        pages = (await pageInfo(result.output).catch(() => undefined))?.pages ?? null;
      } catch (err) {
        signal.throwIfAborted();
        if (!(err instanceof AppError)) throw err;
        // a step's error text may name the job's work directory: the message shows paths relative to it
        failure = err.message.split(`${work}${path.sep}`).join('').split(work).join('.');
        stages = [];
      }
      await db.transaction(async (tx) => {
        const now = await lockInFlight(tx, job);
        if (!now) return; // canceled or recovered meanwhile: the result is not wanted
        if (failure !== undefined) {
          await transitionJob(tx, now, 'error', { message: failure, log: `preprocessing failed: ${failure}` });
          return;
        }
        await setStages(tx, job.id, [...now.stages.filter((s) => s.stage !== 'preprocessed' && !s.stage.startsWith('step-')), ...stages], pages);
        await transitionJob(tx, now, 'waitprocessing', { log: `preprocessed with flow "${job.flow}"${pages !== null ? ` (${pages} pages)` : ''}` });
      });
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }

  /**
   * Sends one handed-off job and records the outcome. When the printer took
   * it (or refused it for good), the next job is claimed in the same
   * transaction (one commit per job instead of two); when the printer was
   * unreachable, the job is postponed and the run waits `retryInMs`.
   */
  private async deliver(
    job: PrintJobRow, printer: DeliveryPrinter, signal: AbortSignal, owns: () => Promise<boolean>, document: Buffer | null | undefined,
  ): Promise<{ retryInMs: number } | { next: Step }> {
    const { db, blobs } = this.deps;
    const stage = job.stages.find((s) => s.stage === 'preprocessed');
    const doc = stage ?? { size: Number(job.size), mimeType: job.mime_type };
    let ack: Acknowledgement | undefined;
    let failure: PrintDeliveryError | undefined;
    try {
      const backend = printBackendFor(printer.connection, { log: this.deps.log, ...this.deps.backend });
      // the flow's output is a blob; the submitted document may be stored with the job
      const content = stage ? blobs.reader(stage.sha256, stage.size) : await openJobDocument(db, blobs, job, document);
      ack = await backend.send({
        // the queue position names the delivery: a repeated job is a new delivery, a retry the same one
        jobId: `${job.id}-${job.seq}`,
        name: job.file_name ?? job.name,
        user: job.owner ?? job.creator ?? 'system',
        mimeType: doc.mimeType,
        copies: job.copies,
        size: doc.size,
      }, content, signal, this.watch(job));
    } catch (err) {
      if (err instanceof PrintDeliveryError) failure = err;
      else if (err instanceof AppError) failure = new PrintDeliveryError('refused', err.message, { cause: err });
      // an unexpected error's text may name internals (paths, addresses): the job says what happened, the log has the error
      else failure = new PrintDeliveryError('uncertain', 'delivery failed with an unexpected error (see the server log)', { cause: err });
      this.deps.log.warn({ err: failure.cause ?? failure, printer: job.printer, job: job.id, kind: failure.kind }, 'print delivery failed');
    }
    if (ack) {
      const touch = this.touchesPrinter(printer);
      // the acknowledgement exists only here until it is written: kept while the database is away
      const { delivered, next, drained, retried } = await this.persistOutcome(job, signal, (attempt) => {
        // the common case in one statement: the outcome and the next hand-off (with other printers' when they come together);
        // a stopping worker, or a write tried again (the first may have committed unseen), hands nothing off with it
        if (this.deps.stopping?.aborted || attempt > 1) return deliveredAndNext(db, job, ack.message, touch, false);
        return this.outcomes.deliveredAndNext({ job, message: ack.message, touchPrinter: touch });
      });
      if (delivered && touch) this.lastPrintedWritten.set(job.printer, Date.now());
      // the job was canceled (and perhaps deleted) meanwhile, or a first write committed unseen: noted, and the run goes on
      if (!delivered) {
        const text = retried ? `delivery ended (${ack.message}); its outcome was written again after a database failure and found the job no longer in processing`
          : `delivery ended (${ack.message}) after the job left processing`;
        await this.persistOutcome(job, signal, async () => {
          await printLogAboutJob(db, { jobId: job.id, printer: job.printer, level: 'warning', text });
          return {};
        });
      }
      if (next) return { next };
      if (this.deps.stopping?.aborted) return { next: STOP };
      // nothing was waiting: the run ends here (no transaction to ask why); a job committed since is the tail check's.
      // A write tried again may have handed a job off unseen, so it looks step by step.
      if (drained && !retried) return { next: { kind: 'idle', why: 'no waiting jobs' } };
      return { next: await this.claimStepByStep(job.printer, signal, owns, job, retried) };
    }
    const recorded = await this.persistOutcome(job, signal, (attempt) => db.transaction(async (tx): Promise<{ retryInMs: number } | { next?: Step }> => {
      const outcome = await this.recordOutcome(tx, job, printer, failure);
      if (outcome !== undefined) {
        await relaxCommit(tx);
        return { retryInMs: outcome };
      }
      if (this.deps.stopping?.aborted) {
        await relaxCommit(tx);
        return { next: STOP };
      }
      // a write tried again (the first may have committed unseen, with a hand-off) hands nothing off with it
      if (attempt > 1) return {};
      return { next: await this.claimIn(tx, job.printer) };
    }));
    if ('retryInMs' in recorded) return { retryInMs: recorded.retryInMs };
    if (recorded.next) return { next: recorded.next };
    return { next: await this.claimStepByStep(job.printer, signal, owns, job, true) };
  }

  /**
   * A job of the printer in `processing` with its hand-off mark, other than
   * `done` (whose outcome is written): a hand-off committed unseen by a write
   * whose answer was lost (the connection cut with the answer to COMMIT) and
   * tried again. Not a byte of it was sent, so it is delivered in its turn;
   * left alone, the next run's recovery would call it "delivery uncertain"
   * (seen under repeated PostgreSQL outages in
   * test/areas/print/dispatch/print-faults).
   *
   * It is this run's only while this run still holds its BullMQ job's lock
   * (`owns`, asked of Redis here): a worker cut off from the database for
   * longer than the takeover needs reads dead, and another worker's run
   * takes the printer over and hands off jobs of its own. Found in flight,
   * such a job is being delivered by that run; delivering it here too would
   * print it twice (seen with a network cut between a worker and
   * PostgreSQL: test/areas/print/dispatch/dispatch-takeover). Without the
   * lock this run ends and touches nothing. With it, no other run has run
   * since this one started (a takeover changes the lock's token for good),
   * so the job is this run's; a takeover from here on ends it "delivery
   * uncertain" at most.
   */
  private async handedOffUnseen(tx: Sql, printer: string, owns: () => Promise<boolean>, done: PrintJobRow | undefined): Promise<NextStep | undefined> {
    const job = (await inFlightJobs(tx, printer)).find((j) => j.id !== done?.id && j.status === 'processing' && j.handoff_at !== null);
    if (job && !(await owns())) {
      const lost = new LockLostError(printer, job.id);
      this.deps.log.warn({ printer, job: job.id }, lost.message);
      throw lost;
    }
    const row = job ? await getPrinter(tx, printer) : undefined;
    return job && row ? { kind: 'deliver', job, printer: row } : undefined;
  }

  /**
   * An opening (its statement, or its transaction's COMMIT) that failed:
   * when the connection broke, it may have committed a hand-off whose answer
   * was lost, nothing of it sent; its token and those still unresolved are
   * kept for the printer's next run (`unsentOpening`). Rethrows `err`.
   */
  private openingFailed(printer: string, tokens: string[], err: unknown): never {
    if (isDatabaseUnreachable(err)) this.unsentOpenings.set(printer, tokens.slice(-UNSENT_OPENINGS_KEPT));
    throw err;
  }

  /**
   * A job this process's run opening handed off (open-run.sql, or
   * claim-next.sql in its transaction) while the
   * connection broke before the answer came: the run failed without knowing
   * whether the hand-off committed, and sent nothing. Found in flight under
   * one of those openings' tokens, the only job in flight, under the
   * dispatch lock, it is delivered now instead of ended "delivery
   * uncertain": nobody else delivers a job under this process's token (a
   * run of another process that found it in flight first ended it
   * uncertain, and it is not in flight any more). Seen under repeated
   * PostgreSQL outages (test/areas/print/dispatch/print-faults): a cut while
   * an opening ran left its job uncertain.
   */
  private async unsentOpening(tx: Sql, printer: string, tokens: readonly string[]): Promise<NextStep | undefined> {
    const job = await inFlightUnder(tx, printer, tokens);
    const row = job ? await getPrinter(tx, printer) : undefined;
    if (!job || !row) return undefined;
    await printLog(tx, { jobId: job.id, printer, level: 'warning', text: 'the hand-off committed but its answer was lost (the database connection broke); nothing was sent: delivered now' });
    return { kind: 'deliver', job, printer: row };
  }

  /**
   * What a delivery may tell and ask while it runs: the device's progress
   * as lines of the job's log (each its own statement; a line that cannot be
   * written is only logged here, the delivery goes on), and whether the job
   * was canceled meanwhile (a backend following the job at the device then
   * cancels it there, IPP Cancel-Job).
   */
  private watch(job: PrintJobRow): DeliveryWatch {
    const { db, log } = this.deps;
    return {
      note: (text, level = 'info') => printLogAboutJob(db, { jobId: job.id, printer: job.printer, level, text })
        .catch((err: unknown) => log.warn({ err, printer: job.printer, job: job.id }, 'a delivery\'s progress line was not written')),
      canceled: () => canceledInDelivery(db, job.id).catch(() => false),
    };
  }

  /**
   * Writes a delivery's outcome, and while the database does not take it
   * (an outage, a failover) keeps it in memory and writes it again, with
   * backoff (250 ms doubling to 5 s), for up to `outcomeRetryMs`; the run
   * waits meanwhile. Gives up (throws) when the run's signal aborts
   * (shutdown after the grace, lock lost) or the time is over: the job stays
   * in flight with its mark and ends "delivery uncertain", never delivered
   * twice. A domain error (AppError) is not retried, nor a lost lock. `retried` says whether
   * a write was repeated (its first try may have committed unseen).
   */
  private async persistOutcome<T extends object>(job: PrintJobRow, signal: AbortSignal, write: (attempt: number) => Promise<T>): Promise<T & { retried: boolean }> {
    const deadline = Date.now() + (this.deps.outcomeRetryMs ?? 0);
    let wait = 250;
    for (let attempt = 1; ; attempt++) {
      try {
        return { ...(await write(attempt)), retried: attempt > 1 };
      } catch (err) {
        if (err instanceof AppError || err instanceof LockLostError || signal.aborted || Date.now() + wait > deadline) throw err;
        if (attempt === 1) this.deps.log.warn({ err, printer: job.printer, job: job.id }, 'a dispatch write (an outcome or a hand-off) was not taken by the database; kept and tried again when it answers');
        await sleep(wait, undefined, { signal }).catch(() => undefined);
        if (signal.aborted) throw err;
        wait = Math.min(wait * 2, 5000);
      }
    }
  }

  /**
   * The next step when the fused statement handed nothing off (held,
   * redirected, empty, not yet due, a flow to run, a write tried again). A
   * claim the database does not answer is tried again like an outcome; a try
   * after a write that may have committed unseen (`lookFirst`, and every
   * claim tried again) first takes the hand-off that write made
   * (`handedOffUnseen`). `done`: the job whose outcome is written (never
   * taken as unseen), or the job just preprocessed (which may be the one).
   */
  private async claimStepByStep(
    printer: string, signal: AbortSignal, owns: () => Promise<boolean>, done: PrintJobRow, lookFirst: boolean, doneOpen = false,
  ): Promise<NextStep> {
    const { step } = await this.persistOutcome(done, signal, (attempt) => this.deps.db.transaction(async (tx) => {
      await lockPrinterDispatch(tx, printer);
      const unseen = lookFirst || attempt > 1 ? await this.handedOffUnseen(tx, printer, owns, doneOpen ? undefined : done) : undefined;
      return { step: unseen ?? await this.claimIn(tx, printer) };
    }));
    return step;
  }

  private async claimIn(tx: Sql, printer: string): Promise<NextStep> {
    const next = await claimNext(tx, this.deps.outbox, printer);
    // a hand-off is committed durably before its first byte goes out; anything else need not wait for the disk
    if (next.kind !== 'deliver') await relaxCommit(tx);
    return next;
  }

  /** The device error on the printer (its runtime shows it until a delivery succeeds) and in its log. */
  private async deviceError(tx: Sql, printer: string, message: string): Promise<void> {
    await recordDeviceError(tx, printer, message);
    await printLog(tx, { printer, level: 'warning', text: message });
  }

  /** Whether this outcome also writes the printer's `last_printed` (at most once a second per printer, or to clear an error). */
  private touchesPrinter(printer: DeliveryPrinter): boolean {
    return printer.error !== null || Date.now() - (this.lastPrintedWritten.get(printer.name) ?? 0) >= 1000;
  }

  /** The outcome of a failed delivery in the job's state and log; a delay when it was postponed. */
  private async recordOutcome(tx: Sql, job: PrintJobRow, printer: DeliveryPrinter, failure: PrintDeliveryError | undefined): Promise<number | undefined> {
    const now = await lockInFlight(tx, job);
    if (!now) {
      await printLogAboutJob(tx, { jobId: job.id, printer: job.printer, level: 'warning', text: `delivery ended (${failure!.message}) after the job left processing` });
      return undefined;
    }
    if (!failure) throw new Error('a delivery without an outcome');
    switch (failure.kind) {
      case 'not-delivered': {
        const delay = backoffMs(now.attempts, this.deps.retry);
        await transitionJob(tx, now, 'postponed', {
          message: failure.message, level: 'warning',
          log: `postponed, nothing delivered: ${failure.message}; next try in ${Math.round(delay / 1000)} s`,
          dispatch: { handoff: 'clear', retryInMs: delay },
        });
        await this.deviceError(tx, job.printer, failure.message);
        return delay;
      }
      case 'duplicate':
        await transitionJob(tx, now, 'processed', { message: failure.message, log: `the device already has this delivery: ${failure.message}`, dispatch: { handoff: 'clear' } });
        return undefined;
      case 'uncertain':
        await transitionJob(tx, now, 'error', { message: `delivery uncertain: ${failure.message}`, log: `delivery uncertain: ${failure.message}; not sent again, repeat the job to print it`, dispatch: { handoff: 'clear' } });
        await this.deviceError(tx, job.printer, failure.message);
        return undefined;
      case 'refused':
        await transitionJob(tx, now, 'error', { message: failure.message, log: `refused: ${failure.message}`, dispatch: { handoff: 'clear' } });
        await this.deviceError(tx, job.printer, failure.message);
        return undefined;
    }
  }
}
