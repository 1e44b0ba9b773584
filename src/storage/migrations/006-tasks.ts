import type { Migration } from './index.js';

/**
 * Indexes for task searches (the `tasks` table itself is in 001): listings
 * limited to a user's own tasks (creator or owner), per service and across
 * services in creation order (the default sort, tid as the tie-break), and
 * `inputDocument` (a document in an input list: `list_items_doc` of 001 finds
 * the items, `lists_task_kind` their task).
 */
export const m006Tasks: Migration = {
  id: 6,
  name: 'tasks',
  sql: `
DROP INDEX IF EXISTS tasks_sid;
CREATE INDEX tasks_sid_created ON tasks (sid, created, tid);
CREATE INDEX tasks_created ON tasks (created, tid);
CREATE INDEX tasks_creator ON tasks (creator) WHERE creator IS NOT NULL;
CREATE INDEX tasks_owner ON tasks (owner) WHERE owner IS NOT NULL;
`,
};
