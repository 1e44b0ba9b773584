import type { Sql } from '../../../storage/driver/database.js';
import { settleTask } from './item-state-store.js';
import type { TaskStatus } from './task-states.js';

/**
 * Derives a processing task's status from its item rows once none is open
 * (`derivedStatus`: all done -> completed, else failed). Called after every
 * final report has committed: of two items finishing at once, at least the
 * later one sees the other's row. One statement: the task row's lock makes
 * the change happen once, and a pause or a new run in between is seen.
 * Returns the new status, or undefined when nothing changed.
 */
export async function settle(db: Sql, tid: string): Promise<TaskStatus | undefined> {
  return settleTask(db, tid);
}
