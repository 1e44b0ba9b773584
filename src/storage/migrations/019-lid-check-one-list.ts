import type { Migration } from './index.js';

/**
 * The lid statement trigger of migration 010 (`list_items_lid_check`), same
 * lock and error, cheaper for the statements it nearly always sees: every
 * insert of the list store names one list, and a large import's COPY of
 * 10,000 rows sorted all of them to find that one lid
 * (`array_agg(DISTINCT lid)`, about 2 ms of the backend per COPY,
 * docs/benchmarks.md). Now the first row's lid is taken and one pass looks
 * for another; only a statement naming several lists (no writer of the
 * service does) still collects the distinct ones.
 */
export const m019LidCheckOneList: Migration = {
  id: 19,
  name: 'lid-check-one-list',
  sql: `
CREATE OR REPLACE FUNCTION list_items_lid_check() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  first_lid uuid;
  lids uuid[];
  locked integer;
BEGIN
  SELECT lid INTO first_lid FROM new_items LIMIT 1;
  IF NOT FOUND THEN -- (plpgsql's FOUND: whether the SELECT found a row)
    RETURN NULL;
  END IF;
  IF EXISTS (SELECT 1 FROM new_items WHERE lid <> first_lid) THEN
    SELECT array_agg(DISTINCT lid) INTO lids FROM new_items;
  ELSE
    lids := ARRAY[first_lid];
  END IF;
  -- a list deleted meanwhile is not locked, so it is not counted
  PERFORM 1 FROM lists WHERE lid = ANY(lids) FOR KEY SHARE;
  GET DIAGNOSTICS locked = ROW_COUNT;
  IF locked < cardinality(lids) THEN
    RAISE foreign_key_violation USING MESSAGE = 'list_items.lid names no list', CONSTRAINT = 'list_items_lid_fkey', TABLE = 'list_items';
  END IF;
  RETURN NULL;
END $$;
`,
};
