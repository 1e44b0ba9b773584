import type { ItemReporter } from '../../../connectors/facets/tasks.js';
import type { Database } from '../../../storage/driver/database.js';
import { writeLateReport } from '../store/task-store.js';
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
      if (applied && (report.outcome === 'done' || report.outcome === 'failed' || report.outcome === 'aborted')) await settle(db, tid);
    },
  };
}
