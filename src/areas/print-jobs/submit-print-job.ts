import type { Readable } from 'node:stream';
import type { BlobStore } from '../../blobs/blob-store.js';
import { AppError } from '../../errors/app-error.js';
import type { Outbox } from '../../outbox/outbox.js';
import { jobIdFor } from '../../queue/jobs.js';
import type { Database, Sql } from '../../storage/driver/database.js';
import { MicroBatcher } from '../../storage/micro-batcher.js';
import { getPrinter, resolveRedirect } from '../printers/printer-store.js';
import { INLINE_DOCUMENT_MAX, readSubmittedDocument } from './job-document.js';
import { initialJobState } from './job-states.js';
import { insertJob, insertJobsStatement, insertJobStatement, submitTarget, submitTargets, type JobToInsert, type PrintJobRow, type SubmitTarget } from './print-job-store.js';
import { printLog } from './print-log.js';

export interface SubmitDeps {
  db: Database;
  blobs: BlobStore;
  outbox: Outbox;
  /** Largest document (bytes); 0 = unlimited. */
  maxBytes: number;
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
  task?: { sid: string; tid: string; item?: string } | null;
  creator: string | null;
  owner?: string | null;
  retentionSec?: number | null;
}

/**
 * The one way a print job enters the system (the `POST /v3/jobs/` extension,
 * `createTestJob`, the print connector). Checks the printer and the flow
 * first (404 before a byte is read), reads a small document whole or streams
 * a larger one into the blob store (job-document.ts), then atomically (one statement, in the caller's `tx` when given)
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
  // the printer, its redirect chain's end and the flow in one statement (outside a transaction, shared with concurrent submissions)
  const seen = tx ? await submitTarget(tx, input.printer, input.flow) : await batchesOf(deps).targets.run({ printer: input.printer, flow: input.flow });
  if (!seen) throw new AppError('PRINTER_NOT_FOUND', `no printer named "${input.printer}"`, { printer: input.printer });
  const { flow } = seen;
  if (flow && !seen.flowExists) throw new AppError('FLOW_NOT_FOUND', `no flow named "${flow}"`, { flow });
  // a small document goes into the job's own statement (job-document.ts); a larger one (or one past maxBytes, refused by put) streams into the blob store
  const read = await readSubmittedDocument(input.source, deps.maxBytes > 0 ? Math.min(INLINE_DOCUMENT_MAX, deps.maxBytes) : INLINE_DOCUMENT_MAX);
  const document = 'bytes' in read ? read.bytes : null;
  const blob = 'bytes' in read ? { sha256: read.sha256, size: read.bytes.length } : await deps.blobs.put(read.stream, deps.maxBytes);
  const job = {
    status: initialJobState(flow),
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
    flow: flow ?? null,
    retentionSec: input.retentionSec ?? null,
  };
  const logLine = (target: string) => `submitted by ${input.creator ?? 'system'} (${input.checkin?.type ?? 'api'}), ${blob.size} bytes${
    target === input.printer ? '' : ` (sent to "${input.printer}", redirected)`} -> ${job.status}`;
  // the job, its log line and its outbox entry in one statement (no transaction of its own), as long as the
  // printer is still there and its redirect chain still ends where it did before the document streamed in;
  // outside a caller's transaction, one statement with the submissions that come at the same time
  const item: JobToInsert = { sentTo: input.printer, target: seen.target, job, log: logLine(seen.target), document,
    wakeJobId: jobIdFor('print.dispatch', { printer: seen.target }) };
  const row = tx ? await insertOne(deps.outbox, tx, item) : await batchesOf(deps).inserts.run(item);
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

/** One submission's job, log line, document and wake-up as one statement (`insertJobStatement`); undefined: not inserted. */
async function insertOne(outbox: Outbox, sql: Sql, it: JobToInsert): Promise<PrintJobRow | undefined> {
  const [row] = await outbox.addWith<'print.dispatch', PrintJobRow>(
    sql, insertJobStatement(it.sentTo, it.target, it.job, it.log, it.document), 'print.dispatch', { printer: it.target });
  return row;
}

/** Several submissions as one statement (`insertJobsStatement`), answers in their order; undefined: not inserted. */
export async function insertMany(outbox: Outbox, sql: Sql, items: readonly JobToInsert[]): Promise<(PrintJobRow | undefined)[]> {
  const rows = await outbox.addEachWith<'print.dispatch', PrintJobRow & { k: number | string }>(
    sql, insertJobsStatement(items), 'print.dispatch', items.map((it) => ({ printer: it.target })));
  const out: (PrintJobRow | undefined)[] = items.map(() => undefined);
  for (const { k, ...row } of rows) out[Number(k) - 1] = row as PrintJobRow;
  return out;
}

/**
 * The submissions of one process (per database and outbox) gathered into
 * shared statements (`MicroBatcher`s, one statement of a kind in flight:
 * larger batches, less CPU per job than two): while one runs, the
 * submissions that come in wait and go together as the next. `targets`: the
 * printer lookups before the documents are read (`submitTargets`);
 * `inserts`: the jobs (`insertJobsStatement`: one round trip, one executor
 * start and one synchronous commit for all of them, one wake-up per
 * printer). A lone submission goes at once as its own statement. Each
 * submission's answer (its 201) still comes only after the statement that
 * stored it committed.
 */
interface Batches {
  targets: MicroBatcher<{ printer: string; flow: string | null | undefined }, SubmitTarget | undefined>;
  inserts: MicroBatcher<JobToInsert, PrintJobRow | undefined>;
}
const batches = new WeakMap<Outbox, WeakMap<Sql, Batches>>();
function batchesOf(deps: SubmitDeps): Batches {
  let byDb = batches.get(deps.outbox);
  if (!byDb) batches.set(deps.outbox, (byDb = new WeakMap()));
  let b = byDb.get(deps.db);
  if (!b) {
    const { outbox, db } = deps;
    b = {
      targets: new MicroBatcher({ one: (a) => submitTarget(db, a.printer, a.flow), many: (asked) => submitTargets(db, asked) }, 1),
      inserts: new MicroBatcher({ one: (it) => insertOne(outbox, db, it), many: (items) => insertMany(outbox, db, items) }, 1),
    };
    byDb.set(db, b);
  }
  return b;
}
