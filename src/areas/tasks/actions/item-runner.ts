import { ItemInterrupted, applyEffect, type ItemEffect, type ItemReport, type TaskItem, type TasksFacet } from '../../../connectors/facets/tasks.js';
import type { ConnectorRegistry } from '../../../connectors/registry.js';
import { stateStore } from '../../../connectors/lifecycle/state-store.js';
import { outboxPort, type ConnectorStateStore, type OutboxPort } from '../../../connectors/ports.js';
import type { Principal } from '../../../auth/principal.js';
import type { AppError } from '../../../errors/app-error.js';
import type { Logger } from '../../../logging/logger.js';
import type { Outbox } from '../../../outbox/outbox.js';
import type { JobContext, JobData } from '../../../queue/jobs.js';
import type { Database } from '../../../storage/driver/database.js';
import { MicroBatcher } from '../../../storage/micro-batcher.js';
import type { ItemInterrupts } from './item-interrupts.js';
import { mergeMetadata } from '../../lists/store/merge-metadata.js';
import * as store from '../store/task-store.js';
import { chunkItems, itemOpen, type ChunkItem, type ChunkRef } from '../store/item-queries.js';
import type { EntryOwners } from '../../repository/repository-service.js';
import { runAs } from '../task-principal.js';
import { settle } from './settle.js';
import type { TaskStatus } from './task-states.js';

/** The repository's read rule for documents (`RepositoryService.readRefusal`). */
export interface DocumentRights {
  readRefusal(p: Principal, doc: { sid: string; uuid: string }, entry: EntryOwners | null): AppError | undefined;
}

export interface RunnerDeps {
  db: Database;
  /** Items naming repository documents run only when the task's principal may read them. */
  documents: DocumentRights;
  registry: ConnectorRegistry;
  outbox: Outbox;
  interrupts: ItemInterrupts;
  log: Logger;
}

/**
 * Runs one `task.items` job: the open items of one chunk of a task run, one
 * after another, through the service's `TasksFacet.runItem`. Idempotent: an
 * item is run only while its row is open under this run (`itemOpen`), and
 * a final report plus the connector's effect is one statement (or one
 * transaction, for an effect given as a function) that a final row refuses,
 * so a retried, re-delivered or reconciled job never redoes a finished item.
 */
export class ItemRunner {
  /** The chunk reads of jobs starting at about the same time, as one statement. */
  private readonly chunks: MicroBatcher<ChunkRef, ChunkItem[]>;
  /** The final reports (with effects as data) of items finishing at about the same time, one per task, as one statement. */
  private readonly finals: MicroBatcher<store.FinalReport, { applied: boolean; settled: TaskStatus | undefined }>;

  constructor(private readonly d: RunnerDeps) {
    // one statement of each kind in flight: the rest wait and go together (measured against two in flight
    // by the tasks benchmark: fewer, larger statements cost less CPU per task on both sides)
    this.chunks = new MicroBatcher({ many: (refs) => chunkItems(d.db, refs) }, 1, 64, { gatherTurn: true });
    this.finals = new MicroBatcher({ many: (reports) => store.writeFinalReports(d.db, reports), key: (r) => r.tid }, 1, 64, { gatherTurn: true });
  }

  async run(job: JobData<'task.items'>, ctx: JobContext): Promise<void> {
    const { sid, tid, run, chunk } = job;
    const items = await this.chunks.run({ tid, run, chunk });
    if (items.length === 0) return; // done already, or the task is paused, aborted, restarted or deleted
    const facet = this.d.registry.get(sid).tasks;
    if (!facet) {
      await store.failChunk(this.d.db, tid, run, chunk, `service "${sid}" no longer runs tasks`);
      await settle(this.d.db, tid);
      return;
    }
    // every final report tries to settle the task in its own statement; when the last one that was
    // stored did not, the status is derived once more after it committed (also when the job stops early)
    const progress = { unsettled: false };
    // the rights the items' documents are read with: the task's owner's, else its creator's (one task per chunk)
    const principal = runAs(items[0]!);
    try {
      for (let i = 0; i < items.length; i++) {
        const row = items[i]!;
        if (ctx.signal.aborted) throw ctx.signal.reason; // shutdown or lost lock: the job runs again, done items are skipped
        // the first item was read open a moment ago; a later one is checked again (a pause or abort meanwhile)
        if (i > 0 && !(await itemOpen(this.d.db, tid, row.item, run))) continue;
        // a document the task's principal may not read (or one gone) fails the item before anything of it
        // (its metadata included) reaches the connector: the rule of GET …/content
        const refusal = row.doc_sid !== null && row.doc_uuid !== null
          ? this.d.documents.readRefusal(principal, { sid: row.doc_sid, uuid: row.doc_uuid }, row.doc)
          : undefined;
        if (refusal) {
          this.d.log.info({ tid, item: row.item, code: refusal.code, user: principal.user }, 'task item refused: its document cannot be read');
          await this.fail(sid, tid, run, row.item, refusal.message, progress);
          continue;
        }
        const item: TaskItem = {
          sid, tid, id: row.item, index: row.position, href: row.href,
          // effective metadata, lowest priority first: document, task, input list, item
          metadata: [row.task_metadata, row.list_metadata, row.item_metadata].reduce(mergeMetadata, row.doc_metadata ?? {}),
        };
        await this.runOne(facet, item, run, ctx, progress);
      }
    } finally {
      if (progress.unsettled) await settle(this.d.db, tid).catch((err: unknown) => this.d.log.warn({ err, tid }, 'task status not derived; the reconciler will'));
    }
  }

  /** A final `failed` report of an item the runner does not hand to the connector (as a data-effect report in `runOne`). */
  private async fail(sid: string, tid: string, run: number, item: string, message: string, progress: { unsettled: boolean }): Promise<void> {
    const report: ItemReport = { jobId: `${tid}.${item}`, item, state: 'failed', outcome: 'failed', message };
    const { applied, settled } = await this.finals.run({ sid, tid, run, report, effect: undefined });
    if (applied) progress.unsettled = settled === undefined;
  }

  /**
   * Runs one open item. `progress.unsettled` says whether the last final
   * report stored left the task's status to be derived again after its commit.
   */
  private async runOne(facet: TasksFacet, item: TaskItem, run: number, job: JobContext, progress: { unsettled: boolean }): Promise<void> {
    const tracked = this.d.interrupts.track(item.tid, run, job.signal);
    let final = false;
    const report = async (r: Omit<ItemReport, 'item'>, effect?: ItemEffect): Promise<boolean> => {
      const full = { ...r, item: item.id };
      const isFinal = r.outcome === 'done' || r.outcome === 'failed' || r.outcome === 'aborted';
      if (isFinal && typeof effect !== 'function') {
        // report, effect (as data) and status derivation: one autocommitted statement, shared with other tasks' items finishing meanwhile
        const { applied, settled } = await this.finals.run({ sid: item.sid, tid: item.tid, run, report: full, effect });
        if (applied) {
          final = true;
          progress.unsettled = settled === undefined;
        }
        return applied;
      }
      // an effect as a function: report and effect in one transaction; a report that is not final: one statement
      const applied = effect && isFinal
        ? await this.d.db.transaction(async (tx) => {
          const ok = await store.writeReport(tx, item.tid, run, full);
          if (ok) await applyEffect(effect, stateStore(tx, item.sid));
          return ok;
        })
        : await store.writeReport(this.d.db, item.tid, run, full);
      if (applied && isFinal) {
        final = true;
        progress.unsettled = true;
      }
      return applied;
    };
    try {
      const { log, outbox, db } = this.d;
      let child: Logger | undefined;
      let ports: OutboxPort | undefined;
      let state: ConnectorStateStore | undefined;
      await facet.runItem(item, {
        // made on first use: most items never log or reach their ports (the mock reports only), and each is an object per item
        get log() {
          return (child ??= log.child({ sid: item.sid, tid: item.tid, item: item.id }));
        },
        get outbox() {
          return (ports ??= outboxPort(outbox, db));
        },
        get state() {
          return (state ??= stateStore(db, item.sid));
        },
        signal: tracked.signal,
        report,
      });
    } catch (err) {
      const reason = tracked.signal.reason as unknown;
      if (tracked.signal.aborted && reason instanceof ItemInterrupted) {
        if (reason.by === 'shutdown') throw job.signal.reason ?? err; // runs again later
        return; // paused or aborted: the action has set the row already
      }
      // the connector failed: retried with the job, failed for good on its last attempt
      if (!job.finalAttempt) throw err;
      this.d.log.warn({ err, tid: item.tid, item: item.id }, 'task item failed');
      await report({ jobId: `${item.tid}.${item.id}`, state: 'failed', outcome: 'failed', message: err instanceof Error ? err.message : String(err) });
    } finally {
      tracked.done();
    }
    // returned without a final report: handed off (its later states come through the ItemReporter)
    if (!final) await store.markHandedOff(this.d.db, item.tid, item.id, run);
  }
}
