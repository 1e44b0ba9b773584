import type { Migration } from './index.js';

/**
 * Lists get their own `name` (JSON, CSV `list.name` and RList `[LIST] NAME`
 * carry one) and a per-list item counter. The counter is the next free
 * position: an append reads and bumps it under the list row's lock in the
 * same statement that inserts, so concurrent appends never share a position
 * and no append scans the items for `max(position)`. Per-user listings filter
 * by creator or owner, hence the two partial indexes.
 */
export const m008Lists: Migration = {
  id: 8,
  name: 'lists',
  sql: `
ALTER TABLE lists ADD COLUMN name text;
ALTER TABLE lists ADD COLUMN item_count integer NOT NULL DEFAULT 0 CHECK (item_count >= 0);
UPDATE lists l SET item_count = (SELECT count(*) FROM list_items i WHERE i.lid = l.lid);
CREATE INDEX lists_user_creator ON lists (creator, created) WHERE kind = 'user';
CREATE INDEX lists_user_owner ON lists (owner, created) WHERE kind = 'user';
`,
};
