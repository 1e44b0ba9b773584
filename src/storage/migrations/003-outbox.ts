import type { Migration } from './index.js';

/**
 * The transactional outbox: a request writes its rows and the jobs they call
 * for in one transaction, so no request waits on Redis and no committed work
 * is lost when Redis is down. The relays (src/outbox/relay.ts) move rows into
 * the queues. A statement trigger announces new unclaimed rows on the
 * `wcr_outbox` channel with the schema as payload (channels are per database,
 * and several schemas may share one); PostgreSQL delivers it at commit, never
 * for a rolled-back insert. Rows inserted already claimed (the writing
 * process's own relay takes them at commit) need no announcement.
 */
export const m003Outbox: Migration = {
  id: 3,
  name: 'outbox',
  sql: `
CREATE TABLE outbox (
  id bigserial PRIMARY KEY,
  name text NOT NULL,
  job_id text NOT NULL,
  data jsonb NOT NULL,
  created timestamptz NOT NULL DEFAULT now(),
  -- a relay that claimed the row owns it until then (a crashed relay's rows come back)
  claimed_until timestamptz
);
-- the same job twice is one job (its id derives from entity and transition)
CREATE UNIQUE INDEX outbox_job_id ON outbox (job_id);

CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM new_rows WHERE claimed_until IS NULL) THEN
    PERFORM pg_notify('wcr_outbox', TG_TABLE_SCHEMA);
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER outbox_insert AFTER INSERT ON outbox
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
`,
};
