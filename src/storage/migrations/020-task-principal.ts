import type { Migration } from './index.js';

/**
 * Whom a task's run acts for (issue 20, item 2): the rights its items read
 * documents with are the task's owner's, else its creator's, and roles come
 * only with a token, so the task keeps them from its creation:
 *
 *   principal  `{ "user", "identities": [...], "roles": [...], "ownOnly" }`:
 *              the creator's token (user, identities, role names), or for a
 *              task created for another user (`x-owner`) that owner as the
 *              only identity with the creator's roles limited to the owner's
 *              own objects (`ownOnly`). Role names, not rights: the
 *              configuration's roles at run time decide what they grant.
 *
 * NULL for tasks created before this migration: they run as their owner, else
 * creator, with no role (`auth.defaultRole` when configured), limited to own
 * objects (src/areas/tasks/task-principal.ts).
 */
export const m020TaskPrincipal: Migration = {
  id: 20,
  name: 'task-principal',
  sql: `
ALTER TABLE tasks ADD COLUMN principal jsonb;
`,
};
