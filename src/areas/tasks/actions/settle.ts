import type { Sql } from '../../../storage/driver/database.js';
import { settleTask } from '../store/task-store.js';
import type { TaskStatus } from './task-states.js';

/**
 * Derives a processing task's status from its item rows once none is open
 * (`derivedStatus`: all done -> completed, else failed). Called by each job
 * once its final reports have committed (and after a late report): of two
 * jobs finishing at once, at least the later one sees the other's rows. One statement: the task row's lock makes
 * the change happen once, and a pause or a new run in between is seen.
 * Returns the new status, or undefined when nothing changed.
 */
export async function settle(db: Sql, tid: string): Promise<TaskStatus | undefined> {
  return settleTask(db, tid);
}
