import type { Database } from '../../../storage/driver/database.js';
import * as store from './item-state-store.js';
import { derivedStatus, type TaskStatus } from './task-states.js';

/**
 * Derives a processing task's status from its item rows once none is open
 * (all done -> completed, else failed). Called after every final report has
 * committed: of two items finishing at once, at least the later one sees the
 * other's row, and the task row (locked here) changes once.
 * Returns the new status, or undefined when nothing changed.
 */
export async function settle(db: Database, tid: string): Promise<TaskStatus | undefined> {
  if (await store.hasOpenItems(db, tid)) return undefined;
  return db.transaction(async (tx) => {
    const task = await store.getTask(tx, tid, true);
    if (task?.status !== 'processing') return undefined;
    const status = derivedStatus(await store.outcomeCounts(tx, tid));
    if (!status) return undefined;
    await store.setStatus(tx, tid, status);
    return status;
  });
}
