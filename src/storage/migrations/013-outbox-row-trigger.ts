import type { Migration } from './index.js';

/**
 * The outbox's announcement (migration 003) as a row trigger with a WHEN
 * condition: PostgreSQL checks `claimed_until IS NULL` itself as each row is
 * inserted and queues nothing for a row inserted already claimed, which is
 * every row while the writing process's relay runs. The statement trigger it
 * replaces ran PL/pgSQL and built a transition table for every insert, one
 * eighth of the database's CPU on the task start path. An unclaimed row still
 * sends `wcr_outbox` with the schema as payload at commit; PostgreSQL folds
 * the same notification sent several times in one transaction into one.
 */
export const m013OutboxRowTrigger: Migration = {
  id: 13,
  name: 'outbox-row-trigger',
  sql: `
DROP TRIGGER outbox_insert ON outbox;
DROP FUNCTION outbox_notify();

CREATE FUNCTION outbox_notify_unclaimed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('wcr_outbox', TG_TABLE_SCHEMA);
  RETURN NULL;
END $$;

CREATE TRIGGER outbox_insert_unclaimed AFTER INSERT ON outbox
  FOR EACH ROW WHEN (NEW.claimed_until IS NULL) EXECUTE FUNCTION outbox_notify_unclaimed();
`,
};
