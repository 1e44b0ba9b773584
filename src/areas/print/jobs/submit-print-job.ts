import type { Readable } from 'node:stream';
import type { BlobStore } from '../../../blobs/blob-store.js';
import type { AppConfig } from '../../../config/schema.js';
import { AppError } from '../../../errors/app-error.js';
import type { Outbox } from '../../../outbox/outbox.js';
import { jobIdFor } from '../../../queue/jobs.js';
import type { Database, Sql } from '../../../storage/driver/database.js';
import { MicroBatcher } from '../../../storage/micro-batcher.js';
import { getPrinter, resolveRedirect } from '../printers/printer-store.js';
import { INLINE_DOCUMENT_MAX, readSubmittedDocument, type SubmittedDocument } from './job-document.js';
import { initialJobState } from './job-states.js';
import type { PrintJobRow } from './store/job-row.js';
import { insertJob, insertSubmittedJob, insertSubmittedJobs, printLog, type JobToInsert } from './store/job-store.js';
import { submitTarget, submitTargets, type SubmitTarget } from './store/submission.js';

export interface SubmitDeps {
  db: Database;
  blobs: BlobStore;
  outbox: Outbox;
  /** Largest document (bytes); 0 = unlimited. */
  maxBytes: number;
  /** How far concurrent submissions share statements (config `print.submissions`). */
  batch: AppConfig['print']['submissions'];
}

export interface SubmitInput {
  printer: string;
  /** The document: up to INLINE_DOCUMENT_MAX bytes read whole and stored with the job, larger ones streamed into the blob store (job-document.ts). */
  source: Readable;
  mimeType: string;
  name?: string;
  fileName?: string | null;
  copies?: number;
  priority?: number;
  /** A flow name; default: the printer's flow; null: none even if the printer has one. */
  flow?: string | null;
  checkin?: { type: 'api' | 'task' | 'hotfolder' | 'testpage'; source?: string | null };
  /** The task item the job prints; `run`: the task's run (the print connector's jobs, migration 021). */
  task?: { sid: string; tid: string; item?: string; run?: number } | null;
  creator: string | null;
  owner?: string | null;
  retentionSec?: number | null;
}

/**
 * The one way a print job enters the system (the `POST /v3/jobs/` extension,
 * `createTestJob`, the print connector). Outside a caller's transaction it
 * first reads up to INLINE_DOCUMENT_MAX bytes: a document that small goes
 * with the printer and flow lookup into one statement shared with concurrent
 * submissions (`insertSubmittedJobs`), which inserts it when the printer is
 * its own chain's end and the flow exists. Otherwise (in `tx`, a larger
 * document, a redirected or unknown printer, an unknown flow) it checks the
 * printer and the flow (404; in `tx` before a byte is read), reads a small
 * document whole or streams a larger one into the blob store (job-document.ts), then atomically (one statement, in the caller's `tx` when given)
 * inserts the job on the end of the printer's redirect chain in
 * `waitpreprocessing` (a flow to run) or `waitprocessing` with a small
 * document's bytes, logs it, and adds
 * the outbox entry `print.dispatch { printer }` that wakes the engine for that
 * printer. If the printer was deleted or redirected while the document
 * streamed in, that statement inserts no job (its wake-up of the old target
 * is harmless) and a transaction decides again.
 * A blob left behind by a failed transaction is collected by housekeeping.
 */
export async function submitPrintJob(deps: SubmitDeps, input: SubmitInput, tx?: Sql): Promise<PrintJobRow> {
  const max = deps.maxBytes > 0 ? Math.min(INLINE_DOCUMENT_MAX, deps.maxBytes) : INLINE_DOCUMENT_MAX;
  const fields = (blob: { sha256: string; size: number }) => ({
    creator: input.creator,
    owner: input.owner ?? null,
    name: input.name ?? input.fileName ?? 'document',
    fileName: input.fileName ?? null,
    mimeType: input.mimeType,
    size: blob.size,
    sha256: blob.sha256,
    copies: input.copies ?? 1,
    priority: input.priority ?? 50,
    checkin: input.checkin ?? { type: 'api' },
    task: input.task ?? null,
    retentionSec: input.retentionSec ?? null,
  });
  const logStart = (size: number) => `submitted by ${input.creator ?? 'system'} (${input.checkin?.type ?? 'api'}), ${size} bytes`;
  let read: SubmittedDocument | undefined;
  if (!tx) {
    // outside a caller's transaction the document is read first: a small one goes with the lookup into one
    // statement shared with the submissions that come at the same time (the printer taken as its own chain's
    // end, the flow checked by the statement); no row (an unknown or redirected printer, an unknown flow): as below
    read = await readSubmittedDocument(input.source, max);
    if ('bytes' in read) {
      const row = await batchesOf(deps).inserts.run({
        sentTo: input.printer, target: input.printer, ownFlow: input.flow === undefined, flow: input.flow ?? null, checkFlow: true,
        job: fields({ sha256: read.sha256, size: read.bytes.length }), logStart: logStart(read.bytes.length), document: read.bytes,
        wakeJobId: jobIdFor('print.dispatch', { printer: input.printer }),
      });
      if (row) return row;
    }
  }
  // the printer, its redirect chain's end and the flow in one statement (outside a transaction, shared with concurrent submissions)
  const seen = tx ? await submitTarget(tx, input.printer, input.flow) : await batchesOf(deps).targets.run({ printer: input.printer, flow: input.flow });
  const refuse = (err: AppError): never => {
    if (read && 'stream' in read) read.stream.destroy(); // a large document's source, read no further
    throw err;
  };
  if (!seen) return refuse(new AppError('PRINTER_NOT_FOUND', `no printer named "${input.printer}"`, { printer: input.printer }));
  const { flow } = seen;
  if (flow && !seen.flowExists) return refuse(new AppError('FLOW_NOT_FOUND', `no flow named "${flow}"`, { flow }));
  // a small document goes into the job's own statement (job-document.ts); a larger one (or one past maxBytes, refused by put) streams into the blob store
  read ??= await readSubmittedDocument(input.source, max);
  const document = 'bytes' in read ? read.bytes : null;
  const blob = 'bytes' in read ? { sha256: read.sha256, size: read.bytes.length } : await deps.blobs.put(read.stream, deps.maxBytes);
  const job = { ...fields(blob), status: initialJobState(flow), flow: flow ?? null };
  const logLine = (target: string) => `${logStart(blob.size)}${target === input.printer ? '' : ` (sent to "${input.printer}", redirected)`} -> ${job.status}`;
  // the job, its log line and its outbox entry in one statement (no transaction of its own), as long as the
  // printer is still there and its redirect chain still ends where it did before the document streamed in;
  // outside a caller's transaction, one statement with the submissions that come at the same time
  const row = tx
    ? await insertSubmittedJob(deps.outbox, tx, input.printer, seen.target, job, logLine(seen.target), document)
    : await batchesOf(deps).inserts.run({
      sentTo: input.printer, target: seen.target, ownFlow: false, flow: job.flow, checkFlow: false, job: fields(blob), logStart: logStart(blob.size), document,
      wakeJobId: jobIdFor('print.dispatch', { printer: seen.target }),
    });
  if (row) return row;
  // the printer was deleted or redirected meanwhile (rare): decided step by step in a transaction
  const run = async (t: Sql): Promise<PrintJobRow> => {
    if (!(await getPrinter(t, input.printer, 'share'))) throw new AppError('PRINTER_NOT_FOUND', `no printer named "${input.printer}"`, { printer: input.printer });
    const target = await resolveRedirect(t, input.printer);
    const inserted = await insertJob(t, { ...job, printer: target, redirectedFrom: target === input.printer ? null : input.printer }, document);
    await printLog(t, { jobId: inserted.id, printer: target, text: logLine(target) });
    await deps.outbox.add(t, 'print.dispatch', { printer: target });
    return inserted;
  };
  return tx ? run(tx) : deps.db.transaction(run);
}

/**
 * The submissions of one process (per database, outbox and batch settings)
 * gathered into shared statements (`MicroBatcher`s; by default one statement
 * of a kind in flight: larger batches, less CPU per job than two): while one
 * runs, the submissions that come in wait and go together as the next.
 * `targets`: the printer lookups before the documents are read
 * (`submitTargets`); `inserts`: the jobs (`insertSubmittedJobs`: one round
 * trip, one executor start and one synchronous commit for all of them, one
 * wake-up per printer). A lone submission goes as its own statement at the
 * end of the event loop's turn (`gatherTurn`: with the submissions that
 * turn's I/O started; the answers of one statement start the clients' next
 * ones). Each submission's answer (its 201) still comes only after the
 * statement that stored it committed.
 */
interface Batches {
  targets: MicroBatcher<{ printer: string; flow: string | null | undefined }, SubmitTarget | undefined>;
  inserts: MicroBatcher<JobToInsert, PrintJobRow | undefined>;
}
const batches = new WeakMap<Outbox, WeakMap<Sql, Map<string, Batches>>>();
function batchesOf(deps: SubmitDeps): Batches {
  let byDb = batches.get(deps.outbox);
  if (!byDb) batches.set(deps.outbox, (byDb = new WeakMap()));
  let bySettings = byDb.get(deps.db);
  if (!bySettings) byDb.set(deps.db, (bySettings = new Map()));
  const { maxInFlight, maxBatch } = deps.batch;
  const key = `${maxInFlight}/${maxBatch}`;
  let b = bySettings.get(key);
  if (!b) {
    const { outbox, db } = deps;
    b = {
      targets: new MicroBatcher({ one: (a) => submitTarget(db, a.printer, a.flow), many: (asked) => submitTargets(db, asked) }, maxInFlight, maxBatch, { gatherTurn: true }),
      // a lone submission too goes as insertSubmittedJobs (it also does the lookup)
      inserts: new MicroBatcher({ many: (items) => insertSubmittedJobs(outbox, db, items) }, maxInFlight, maxBatch, { gatherTurn: true }),
    };
    bySettings.set(key, b);
  }
  return b;
}
