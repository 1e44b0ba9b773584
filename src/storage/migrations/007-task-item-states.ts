import type { Migration } from './index.js';

/**
 * Task actions: the `tasks.status` CHECK of migration 001 replaced by one
 * listing the state table's statuses, the task's run counter (each start or
 * resume is a new run; a job of an older run does nothing), and one row per
 * input item and task with the connector's last report (`cstats` is presented
 * from these rows, so a thousand items reporting at once never contend on the
 * task's row).
 *
 * Frozen text: the lists below are this migration's own copy of what
 * `src/areas/tasks/actions/task-states.ts` held when it shipped
 * (`TASK_STATUSES`, `ITEM_OUTCOMES`, `OPEN_OUTCOMES`); they were generated
 * from it once and are the same bytes. A change to those tables needs a new
 * migration replacing the CHECKs; test/storage/state-checks.test.ts compares
 * the live tables with the constraints of a migrated schema.
 */
export const m007TaskItemStates: Migration = {
  id: 7,
  name: 'task-item-states',
  sql: `
ALTER TABLE tasks DROP CONSTRAINT IF EXISTS tasks_status_check;
ALTER TABLE tasks ADD CONSTRAINT tasks_status_check CHECK (status IN ('idle', 'processing', 'paused', 'completed', 'failed', 'aborted'));
ALTER TABLE tasks ADD COLUMN run integer NOT NULL DEFAULT 0;

CREATE TABLE task_items (
  tid uuid NOT NULL REFERENCES tasks(tid) ON DELETE CASCADE,
  -- the input item (list_items.id); no foreign key: a removed item's report stays until the next start
  item uuid NOT NULL,
  -- the run that last (re)set it, and its share of that run's work (one job per chunk)
  run integer NOT NULL,
  chunk integer NOT NULL,
  outcome text NOT NULL CHECK (outcome IN ('queued', 'running', 'paused', 'done', 'failed', 'aborted')),
  -- runItem returned with the item still running elsewhere (a print job): its later reports come
  -- through the ItemReporter, and no job of this run picks it up again
  handed_off boolean NOT NULL DEFAULT false,
  -- the connector's last report: cstats is { job_id: { state, item, href, updated, message } }
  job_id text,
  state text,
  href text,
  message text,
  updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tid, item)
);
-- open work: what a chunk job picks up, what the reconciler and the status derivation look for
CREATE INDEX task_items_open ON task_items (tid, run, chunk) WHERE outcome IN ('queued', 'running', 'paused');
-- the reconcile source: work a job still has to do
CREATE INDEX task_items_unrun ON task_items (tid, run, chunk) WHERE outcome IN ('queued', 'running') AND NOT handed_off;
`,
};
