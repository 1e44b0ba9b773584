import path from 'node:path';
import { printBackendTimeouts } from '../../../connectors/print-backends/print-backend.js';
import type { PendingJob } from '../../area.js';
import { printLog, transitionJob } from '../jobs/store/job-store.js';
import { recordDeviceError } from '../printers/printer-store.js';
import type { JobHandlers } from '../../../queue/jobs.js';
import type { Services } from '../../../runtime/services.js';
import { blockingJob, lockPrinterDispatch, printersWithWork } from './dispatch-store.js';
import { Dispatcher } from './dispatcher.js';

/**
 * What the print-jobs area wires for the engine: the `print.dispatch`
 * handler, the reconciler's source of dispatch work and its abandon step.
 */
export function dispatchHandlers(s: Services, stopped?: AbortSignal, stopping?: AbortSignal): JobHandlers {
  const c = s.config.printDispatch;
  const dispatcher = new Dispatcher({
    db: s.db, blobs: s.blobs, outbox: s.outbox, log: s.log.child({ component: 'print-dispatch' }),
    workDir: path.join(s.config.dataDir, 'print-work'),
    retry: { baseMs: c.retryBaseMs, maxMs: c.retryMaxMs },
    outcomeRetryMs: c.outcomeRetryMs,
    backend: { timeouts: printBackendTimeouts(c), confinement: s.printConfinement },
    outcomes: c.outcomes,
    wake: (printer) => s.queue.enqueue('print.dispatch', { printer }),
    stopped,
    stopping,
  });
  return { 'print.dispatch': ({ printer }, ctx) => dispatcher.run(printer, ctx) };
}

/** Printers with dispatch work in PostgreSQL: the reconciler re-creates their dispatch job when Redis lost it. */
export async function pendingDispatch(s: Services, limit: number): Promise<PendingJob[]> {
  return (await printersWithWork(s.db, limit)).map(({ printer, blocking }) => ({ name: 'print.dispatch' as const, data: { printer }, subject: `job ${blocking}` }));
}

/**
 * A printer whose dispatch keeps failing on one job (re-created past
 * `queues.maxRecreations`; the reconciler re-creates it again): the printer
 * says so in its error (`GET /v3/printers`: runtime status `error` while
 * nothing is in flight) and its log, until its next delivery clears it.
 */
export async function dispatchFailing(s: Services, job: PendingJob, reason: string): Promise<void> {
  if (job.name !== 'print.dispatch') return;
  const text = `dispatch keeps failing${job.subject ? ` on ${job.subject}` : ''}: ${reason}; retried at every reconcile pass`;
  await s.db.transaction(async (tx) => {
    await recordDeviceError(tx, job.data.printer, text);
    await printLog(tx, { printer: job.data.printer, level: 'error', text });
  });
}

/** A printer whose dispatch cannot run: the job blocking its queue ends in error, so the jobs behind it can go. */
export async function abandonDispatch(s: Services, job: PendingJob, reason: string): Promise<void> {
  if (job.name !== 'print.dispatch') return;
  await s.db.transaction(async (tx) => {
    await lockPrinterDispatch(tx, job.data.printer);
    const blocking = await blockingJob(tx, job.data.printer);
    if (!blocking) return;
    const text = blocking.status === 'processing' && blocking.handoff_at ? `delivery uncertain: dispatch abandoned (${reason})` : `dispatch abandoned: ${reason}`;
    await transitionJob(tx, blocking, 'error', { message: text.slice(0, 500), log: text, dispatch: { handoff: 'clear' } });
  });
}

/** The engine's part of the print-jobs area: `{ name, v3, ...printDispatchParts }`. */
export const printDispatchParts = {
  jobs: dispatchHandlers,
  pending: pendingDispatch,
  abandon: abandonDispatch,
  failing: dispatchFailing,
} as const;
