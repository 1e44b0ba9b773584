import type { Migration } from './index.js';

/**
 * Per-user messages (workflow API "Messages", DESIGN.md section 6):
 * `{ uuid, date, type, text, source, expires }` for one `recipient`.
 * `expires` NULL means the configured default lifetime after `date`
 * (`messages.lifetimeSec`): readers and housekeeping compute it, so the
 * triggers below need no configuration.
 *
 * Two triggers post a message in the transaction that commits the change
 * they report, so such a message is never lost (it commits with the change)
 * and never doubled (it rolls back with it; one message per transition):
 *
 *   tasks       a task that moves into `failed`: an error message to its
 *               owner, else its creator;
 *   print_jobs  a print job that moves into `error`: an error message to its
 *               owner, else its creator, with the job's message (the reason).
 *
 * Every committed message is announced by `NOTIFY message_created` with its
 * uuid (src/areas/messages/message-service.ts turns that into the
 * `message.created` call site). The migration is frozen text: the states
 * named here are copies of the state tables of 001 and 009.
 */
export const m023Messages: Migration = {
  id: 23,
  name: 'messages',
  sql: `
CREATE TABLE messages (
  uuid uuid PRIMARY KEY,
  recipient text NOT NULL,
  date timestamptz NOT NULL DEFAULT now(),
  type text NOT NULL CHECK (type IN ('info', 'warning', 'error')),
  text text NOT NULL,
  source text,
  href text,
  expires timestamptz,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  creator text NOT NULL,
  modified timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX messages_recipient_date ON messages (recipient, date DESC, uuid);
CREATE INDEX messages_date ON messages (date);
CREATE INDEX messages_expires ON messages (expires) WHERE expires IS NOT NULL;

CREATE FUNCTION announce_message() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('message_created', NEW.uuid::text);
  RETURN NULL;
END $$;
CREATE TRIGGER messages_created AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION announce_message();

CREATE FUNCTION message_on_task_failed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF COALESCE(NEW.owner, NEW.creator) IS NOT NULL THEN
    INSERT INTO messages (uuid, recipient, type, text, source, href, creator)
    VALUES (gen_random_uuid(), COALESCE(NEW.owner, NEW.creator), 'error',
      left('Task "' || NEW.name || '" failed', 2000), 'task:' || NEW.sid,
      '/v1/services/' || NEW.sid || '/tasks/' || NEW.tid::text, 'system:tasks');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_failed_message AFTER UPDATE OF status ON tasks FOR EACH ROW
  WHEN (NEW.status = 'failed' AND OLD.status IS DISTINCT FROM 'failed')
  EXECUTE FUNCTION message_on_task_failed();

CREATE FUNCTION message_on_print_job_error() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF COALESCE(NEW.owner, NEW.creator) IS NOT NULL THEN
    INSERT INTO messages (uuid, recipient, type, text, source, href, creator)
    VALUES (gen_random_uuid(), COALESCE(NEW.owner, NEW.creator), 'error',
      left('Print job ' || NEW.id::text || ' "' || NEW.name || '" on printer "' || NEW.printer || '" ended in error'
        || COALESCE(': ' || NEW.message, ''), 2000),
      'print:' || NEW.printer, '/v3/jobs/' || NEW.id::text, 'system:print');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER print_jobs_error_message AFTER UPDATE OF status ON print_jobs FOR EACH ROW
  WHEN (NEW.status = 'error' AND OLD.status IS DISTINCT FROM 'error')
  EXECUTE FUNCTION message_on_print_job_error();
`,
};
