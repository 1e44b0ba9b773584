import type { Migration } from './index.js';

/**
 * The connectors' action hooks made durable (the `print` connector holds,
 * releases and cancels a task's print jobs on pause, resume and abort).
 * They ran in the request after the action committed, so a crash in
 * between left an aborted task's jobs printing. Now the action's own
 * transaction writes the need as data and queues the hook (outbox):
 *
 *   hook_due   the number of the newest action whose hook has not run to
 *              the end (from task_hook_seq; NULL: nothing due). The
 *              `task.hook` job with that number applies the hook of the
 *              task's present status, then clears it if nothing moved
 *              meanwhile; the reconciler queues the job again for a task
 *              whose number stays (a job Redis lost).
 *
 * The partial index is the reconciler's source.
 */
export const m028TaskHooks: Migration = {
  id: 28,
  name: 'task-hooks',
  sql: `
CREATE SEQUENCE task_hook_seq;
ALTER TABLE tasks ADD COLUMN hook_due bigint;
CREATE INDEX tasks_hook_due ON tasks (tid) WHERE hook_due IS NOT NULL;
`,
};
