import type { Migration } from './index.js';

/**
 * A task's progress kept with the task (issue 24, item 6), so a poller or a
 * panel reads three numbers instead of every item's `cstats`:
 *
 *   progress_total   the items of its input list
 *   progress_done    of those, the ones whose item row is `done`
 *   progress_failed  of those, the ones whose item row is `failed` (a new
 *                    run queues them again: back to 0)
 *
 * The task store keeps them in the statements that write item states and
 * input changes (src/areas/tasks/store/task-store.ts). Existing tasks are
 * counted from their rows once, here.
 */
export const m026TaskProgress: Migration = {
  id: 26,
  name: 'task-progress',
  sql: `
ALTER TABLE tasks
  ADD COLUMN progress_total integer NOT NULL DEFAULT 0,
  ADD COLUMN progress_done integer NOT NULL DEFAULT 0,
  ADD COLUMN progress_failed integer NOT NULL DEFAULT 0;
UPDATE tasks k SET
  progress_total = COALESCE((SELECT l.item_count FROM lists l WHERE l.tid = k.tid AND l.kind = 'input'), 0),
  progress_done = (SELECT count(*) FROM task_items t JOIN lists l ON l.tid = t.tid AND l.kind = 'input'
    JOIN list_items li ON li.lid = l.lid AND li.id = t.item WHERE t.tid = k.tid AND t.outcome = 'done'),
  progress_failed = (SELECT count(*) FROM task_items t JOIN lists l ON l.tid = t.tid AND l.kind = 'input'
    JOIN list_items li ON li.lid = l.lid AND li.id = t.item WHERE t.tid = k.tid AND t.outcome = 'failed');
`,
};
