import type { ItemReport, ItemReporter } from '../../../connectors/facets/tasks.js';
import type { Database, Sql } from '../../../storage/driver/database.js';
import { noteAbortedItem, writeLateReport, writeReport } from '../store/task-store.js';
import { settle } from './settle.js';

/**
 * Reports of handed-off items (a print job that changed state after `runItem`
 * returned): stored on the item's row under the task's current run, refused
 * like a job's reports when the row is final; a final one settles the task.
 */
export function itemReporter(db: Database): ItemReporter {
  return {
    async report(tid, report) {
      const applied = await writeLateReport(db, tid, report);
      if (applied && isFinal(report)) await settle(db, tid);
    },
  };
}

const isFinal = (r: ItemReport) => r.outcome === 'done' || r.outcome === 'failed' || r.outcome === 'aborted';

/**
 * A handed-off item's report for the run it was handed off in (a print job
 * of that run), in the caller's transaction, which serializes the reports of
 * one piece of work: stored as `writeReport` stores a job's report (refused
 * for a final row or another run); on an item the task's abort closed, the
 * state and message are noted and the outcome stays `aborted`. `settle`:
 * call `settleAfter` once the transaction committed.
 */
export async function reportForRun(tx: Sql, tid: string, run: number, report: ItemReport): Promise<{ applied: boolean; settle: boolean }> {
  if (await writeReport(tx, tid, run, report)) return { applied: true, settle: isFinal(report) };
  return { applied: await noteAbortedItem(tx, tid, run, report), settle: false };
}

/** Derives the task's status after a final `reportForRun` committed. */
export async function settleAfter(db: Database, tid: string): Promise<void> {
  await settle(db, tid);
}
