import type { Principal } from '../../../auth/principal.js';
import type { Action } from '../../../config/schema.js';
import { AppError } from '../../../errors/app-error.js';
import type { ODataQuery } from '../../../query/odata.js';
import type { Services } from '../../../runtime/services.js';
import type { Readable } from 'node:stream';
import { collectJobZip } from '../documents/collect.js';
import { pageInfo, type PageInfo } from '../documents/page-info.js';
import { logText, presentJob } from './present.js';
import type { Sql } from '../../../storage/driver/database.js';
import { getPrinter, resolveRedirect } from '../printers/printer-store.js';
import { JOB_OPERATION_RULES, UNDELETABLE_JOB_STATES, operationAllowed, requeueState, type JobOperation } from './job-states.js';
import { getJob, inlineDocument, jobLog, type PrintLogRow } from './store/job-reads.js';
import { parseJobId, type PrintJobRow } from './store/job-row.js';
import { deleteJob, setKeepTempfiles, transitionJob } from './store/job-store.js';
import { listJobs } from './store/listing.js';
import { jobDocumentSource } from './job-document.js';
import { submitPrintJob, type SubmitInput } from './submit-print-job.js';

/**
 * The print jobs' domain operations (DESIGN.md section 7): rights through the
 * policy (`jobs` area: a user sees and acts on own jobs, an operator on all),
 * state changes through the table in job-states.ts under a row lock. No HTTP.
 */
export class PrintJobService {
  constructor(private readonly s: Pick<Services, 'config' | 'db' | 'blobs' | 'outbox' | 'policy'>) {}

  private get maxBytes(): number {
    return this.s.config.print.maxDocumentBytes || this.s.config.server.maxUploadBytes;
  }

  async list(p: Principal, q: ODataQuery): Promise<{ page: string; total?: number }> {
    const scope = this.s.policy.listingScope(p, 'jobs', 'read');
    return listJobs(this.s.db, q, scope, this.s.config.print.retention);
  }

  /** A job the caller may read; 404 for an id that names nothing (or is no id), or another user's job. */
  async get(p: Principal, rawId: string): Promise<PrintJobRow> {
    return this.find(p, rawId, 'read');
  }

  /**
   * The job for `action`. Another user's job is reported absent (404
   * `JOB_NOT_FOUND`, the same answer as for an id that names nothing), as
   * tasks and lists are: job ids are sequential, and a 403 would tell which
   * of them exist. 403 without the area right at all, or for `action` on a
   * job the caller may read but not change.
   */
  private async find(p: Principal, rawId: string, action: Action, sql: Sql = this.s.db, lock = false): Promise<PrintJobRow> {
    const id = parseJobId(rawId);
    const job = id === undefined ? undefined : await getJob(sql, id, lock);
    if (!job || !this.s.policy.may(p, 'jobs', 'read', job)) {
      this.s.policy.require(p, 'jobs', 'read');
      throw new AppError('JOB_NOT_FOUND', `no print job ${rawId.slice(0, 40)}`, { id: rawId.slice(0, 40) });
    }
    this.s.policy.require(p, 'jobs', action, job);
    return job;
  }

  async remove(p: Principal, rawId: string): Promise<PrintJobRow> {
    return this.s.db.transaction(async (tx) => {
      const job = await this.find(p, rawId, 'delete', tx, true);
      // the row lock keeps the engine's hand-off or outcome from changing the state under this check
      if (UNDELETABLE_JOB_STATES.includes(job.status)) {
        throw new AppError('JOB_IN_DELIVERY', `job ${job.id} is being delivered to its printer; cancel it or wait for the outcome, then delete it`,
          { id: Number(job.id), status: job.status });
      }
      // the document and stage blobs go with the next blob collection
      await deleteJob(tx, Number(job.id));
      return job;
    });
  }

  /**
   * cancel, pause, resume, repeat, move: allowed from the states of
   * JOB_OPERATION_RULES (else 412 INVALID_STATE); a job that waits again
   * wakes its printer's dispatch through the outbox.
   */
  async operate(p: Principal, rawId: string, op: JobOperation, body: { printer?: string } = {}): Promise<PrintJobRow> {
    return (await this.operateIf(p, rawId, op, body))!;
  }

  /**
   * `operate`, only if `precondition` holds in the operation's own
   * transaction (checked first, so what it locks is held until the commit);
   * undefined, nothing done, when it does not.
   */
  async operateIf(p: Principal, rawId: string, op: JobOperation, body: { printer?: string } = {}, precondition?: (tx: Sql) => Promise<boolean>): Promise<PrintJobRow | undefined> {
    return this.s.db.transaction(async (tx) => {
      if (precondition && !(await precondition(tx))) return undefined;
      const job = await this.find(p, rawId, 'act', tx, true);
      if (!operationAllowed(op, job.status)) {
        throw new AppError('INVALID_STATE', `${op} is not possible while the job is ${job.status} (possible from: ${JOB_OPERATION_RULES[op].from.join(', ')})`,
          { id: Number(job.id), status: job.status, operation: op, allowedFrom: [...JOB_OPERATION_RULES[op].from] });
      }
      const rule = JOB_OPERATION_RULES[op];
      const to = rule.to === 'requeue' ? requeueState(job) : rule.to === 'same' ? job.status : rule.to;
      let printer = job.printer;
      let redirectedFrom: string | null | undefined;
      if (op === 'move') {
        const target = body.printer!;
        if (!(await getPrinter(tx, target, 'share'))) throw new AppError('PRINTER_NOT_FOUND', `no printer named "${target}"`, { printer: target });
        printer = await resolveRedirect(tx, target);
        redirectedFrom = printer === target ? null : target;
      }
      const requeue = op !== 'cancel' && op !== 'pause';
      const row = await transitionJob(tx, job, to, {
        log: op === 'move' ? `moved from "${job.printer}" to "${printer}" by ${p.user}` : `${op} by ${p.user}: ${job.status} -> ${to}`,
        message: op === 'repeat' ? null : undefined,
        set: { printer, redirectedFrom, requeue, resetAttempts: op === 'repeat' || op === 'move' },
      });
      if (requeue) await this.s.outbox.add(tx, 'print.dispatch', { printer: row.printer });
      return row;
    });
  }

  /** Page count and sizes of what prints: the flow's output once there is one, else the document. */
  async pageInfo(p: Principal, rawId: string): Promise<PageInfo & { source: 'document' | 'preprocessed' }> {
    const job = await this.get(p, rawId);
    const stage = job.stages.find((st) => st.stage === 'preprocessed');
    const source = stage ? this.s.blobs.pathOf(stage.sha256) : await jobDocumentSource(this.s.db, this.s.blobs, job);
    if (typeof source === 'string' && !(await this.s.blobs.has(stage?.sha256 ?? job.blob_sha256))) {
      throw new AppError('JOB_NOT_FOUND', `the document of job ${job.id} is gone`, { id: Number(job.id) });
    }
    return { ...(await pageInfo(source)), source: stage ? 'preprocessed' : 'document' };
  }

  /** A streamed ZIP of the job's record, log, document and kept stage files (support). */
  async collect(p: Principal, rawId: string): Promise<{ job: PrintJobRow; zip: Readable }> {
    const job = await this.get(p, rawId);
    const log = await jobLog(this.s.db, Number(job.id));
    const zip = await collectJobZip(this.s.blobs, {
      record: presentJob(job, this.s.config.print.retention),
      log: logText(log),
      document: { sha256: job.blob_sha256, name: job.file_name ?? job.name, bytes: await inlineDocument(this.s.db, job.id) },
      stages: job.stages,
    });
    return { job, zip };
  }

  async log(p: Principal, rawId: string): Promise<PrintLogRow[]> {
    const job = await this.get(p, rawId);
    return jobLog(this.s.db, Number(job.id));
  }

  async tempfiles(p: Principal, rawId: string, keep: boolean): Promise<PrintJobRow> {
    return this.s.db.transaction(async (tx) => {
      const job = await this.find(p, rawId, 'act', tx, true);
      return setKeepTempfiles(tx, job, keep);
    });
  }

  /** `POST /v3/jobs/` and createTestJob: rights here, the rest in submitPrintJob. */
  async submit(p: Principal, input: Omit<SubmitInput, 'creator'>, owner?: string): Promise<PrintJobRow> {
    this.s.policy.require(p, 'jobs', 'write');
    const o = this.s.policy.ownerFor(p, 'jobs', owner);
    return submitPrintJob({ db: this.s.db, blobs: this.s.blobs, outbox: this.s.outbox, maxBytes: this.maxBytes, batch: this.s.config.print.submissions },
      { ...input, creator: p.user, owner: o });
  }
}
