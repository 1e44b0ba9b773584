import type { Migration } from './index.js';

/**
 * Cheaper rows for large list imports (docs/benchmarks.md, CSV import),
 * with the same rules as before:
 *
 * - **The document index is a hash index.** `list_items_doc` answers only
 *   `doc_uuid = …` (and `= ANY(…)` through a bitmap scan). Document ids are
 *   random, so a million-row import made a million inserts all over a btree;
 *   a hash index does the same inserts for about half the CPU (no descent
 *   and no uuid comparisons). Hash indexes are WAL-logged and crash-safe.
 * - **`list_items.lid` references `lists` through triggers, not a foreign
 *   key.** The foreign key ran one check query per inserted row (a third of
 *   a COPY's CPU); the statement trigger checks each statement's distinct
 *   lids once, with the same lock (`FOR KEY SHARE` on the list rows, so a
 *   concurrent delete of a list waits for the inserting transaction) and the
 *   same error (SQLSTATE 23503, constraint `list_items_lid_fkey`). A row
 *   trigger does the same for an update that moves an item to another list
 *   (none does today). Deleting a list deletes its items (was `ON DELETE
 *   CASCADE`), and changing a referenced list's `lid` is refused (was NO
 *   ACTION). Unlike the foreign key's cascade, the delete trigger does not
 *   raise a serialization failure under REPEATABLE READ when another
 *   transaction added items after the deleting one's snapshot; every delete
 *   of lists runs under READ COMMITTED, and every insert of items locks its
 *   list row first (list-store.ts), so a delete waits for it and then sees
 *   its items.
 */
export const m010ListItemIngest: Migration = {
  id: 10,
  name: 'list-item-ingest',
  sql: `
DROP INDEX list_items_doc;
CREATE INDEX list_items_doc ON list_items USING hash (doc_uuid) WHERE doc_uuid IS NOT NULL;

ALTER TABLE list_items DROP CONSTRAINT list_items_lid_fkey;

CREATE FUNCTION list_items_lid_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  lids uuid[];
  found integer;
BEGIN
  SELECT array_agg(DISTINCT lid) INTO lids FROM new_items;
  IF lids IS NULL THEN
    RETURN NULL;
  END IF;
  -- a list deleted meanwhile is not locked, so it is not counted
  PERFORM 1 FROM lists WHERE lid = ANY(lids) FOR KEY SHARE;
  GET DIAGNOSTICS found = ROW_COUNT;
  IF found < cardinality(lids) THEN
    RAISE foreign_key_violation USING MESSAGE = 'list_items.lid names no list', CONSTRAINT = 'list_items_lid_fkey', TABLE = 'list_items';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER list_items_lid_insert AFTER INSERT ON list_items
  REFERENCING NEW TABLE AS new_items FOR EACH STATEMENT EXECUTE FUNCTION list_items_lid_check();

CREATE FUNCTION list_items_lid_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM lists WHERE lid = NEW.lid FOR KEY SHARE;
  IF NOT FOUND THEN
    RAISE foreign_key_violation USING MESSAGE = 'list_items.lid names no list', CONSTRAINT = 'list_items_lid_fkey', TABLE = 'list_items';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER list_items_lid_update AFTER UPDATE OF lid ON list_items
  FOR EACH ROW WHEN (OLD.lid IS DISTINCT FROM NEW.lid) EXECUTE FUNCTION list_items_lid_moved();

CREATE FUNCTION lists_delete_items() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM list_items WHERE lid = OLD.lid;
  RETURN NULL;
END $$;
CREATE TRIGGER lists_delete_items AFTER DELETE ON lists
  FOR EACH ROW EXECUTE FUNCTION lists_delete_items();

CREATE FUNCTION lists_lid_referenced() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM list_items WHERE lid = OLD.lid) THEN
    RAISE foreign_key_violation USING MESSAGE = 'list_items still refer to the list', CONSTRAINT = 'list_items_lid_fkey', TABLE = 'list_items';
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER lists_lid_update AFTER UPDATE OF lid ON lists
  FOR EACH ROW WHEN (OLD.lid IS DISTINCT FROM NEW.lid) EXECUTE FUNCTION lists_lid_referenced();
`,
};
