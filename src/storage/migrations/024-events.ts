import type { Migration } from './index.js';

/**
 * The event log behind `GET /v1/events` (docs/design/events.md). An event is
 * written in the same transaction as the change it reports, by the triggers
 * below or by `raise_event` called in the writer's own statement, so a change
 * that rolls back raises nothing and every writer (API, worker, SQL) is
 * covered without a line of TypeScript.
 *
 *   id         insertion order (not commit order: the publisher orders by `seq`)
 *   seq        the event's position in the stream, dense, given by the one
 *              publisher at a time when the event reaches Redis; null until
 *              then. `Last-Event-ID` is a `seq`.
 *   type       task.updated, command.updated, job.updated, printer.updated,
 *              panel.create, message.created
 *   area       the rights area that decides who may see it (tasks, documents,
 *              jobs, printers, panels, messages)
 *   object     the object's key (tid, cid, job id, printer name, pid, uuid)
 *   recipient  when set, the one user the event is for (panel.create, message.created)
 *   creator, owner  the object's; both null = shared by everybody with the area's read right
 *   payload    small: ids and state; clients GET the object for more
 *
 * Payloads stay small and each trigger fires only on the state columns, so
 * an item report (task_items) or a dispatch's log line raises nothing.
 * `events_notify` wakes the publishers at commit (payload: the schema, as the
 * outbox's channel does).
 */
export const m024Events: Migration = {
  id: 24,
  name: 'events',
  sql: `
CREATE TABLE events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  seq bigint UNIQUE,
  type text NOT NULL,
  area text NOT NULL,
  object text NOT NULL,
  recipient text,
  creator text,
  owner text,
  payload jsonb NOT NULL,
  created timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_unpublished ON events (id) WHERE seq IS NULL;
CREATE INDEX events_created ON events (created);

CREATE FUNCTION raise_event(p_type text, p_area text, p_object text, p_payload jsonb,
  p_recipient text DEFAULT NULL, p_creator text DEFAULT NULL, p_owner text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO events (type, area, object, recipient, creator, owner, payload)
  VALUES (p_type, p_area, p_object, p_recipient, p_creator, p_owner, p_payload);
  PERFORM pg_notify('wcr_events', current_schema());
END $$;

CREATE FUNCTION events_task_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM raise_event('task.updated', 'tasks', NEW.tid::text,
    jsonb_build_object('tid', NEW.tid, 'sid', NEW.sid, 'status', NEW.status,
      'href', '/v1/services/' || NEW.sid || '/tasks/' || NEW.tid),
    NULL, NEW.creator, NEW.owner);
  RETURN NULL;
END $$;
CREATE TRIGGER tasks_event AFTER UPDATE OF status ON tasks
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION events_task_updated();

CREATE FUNCTION events_command_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM raise_event('command.updated', 'documents', NEW.cid::text,
    jsonb_build_object('cid', NEW.cid, 'sid', NEW.sid, 'command', NEW.command, 'state', NEW.state,
      'href', '/v1/services/' || NEW.sid || '/repo/command/' || NEW.cid),
    NULL, NEW.creator, NULL);
  RETURN NULL;
END $$;
CREATE TRIGGER commands_event AFTER UPDATE OF state ON commands
  FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state) EXECUTE FUNCTION events_command_updated();

CREATE FUNCTION events_job_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM raise_event('job.updated', 'jobs', NEW.id::text,
    jsonb_build_object('id', NEW.id, 'status', NEW.status, 'printer', NEW.printer),
    NULL, NEW.creator, NEW.owner);
  RETURN NULL;
END $$;
CREATE TRIGGER print_jobs_event AFTER UPDATE OF status, printer ON print_jobs
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.printer IS DISTINCT FROM NEW.printer)
  EXECUTE FUNCTION events_job_updated();

CREATE FUNCTION events_printer_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM raise_event('printer.updated', 'printers', OLD.name, jsonb_build_object('name', OLD.name, 'deleted', true));
    RETURN NULL;
  END IF;
  PERFORM raise_event('printer.updated', 'printers', NEW.name,
    jsonb_build_object('name', NEW.name, 'enabled', NEW.enabled, 'paused', NEW.paused, 'redirect', NEW.redirect,
      'error', NEW.error IS NOT NULL));
  RETURN NULL;
END $$;
CREATE TRIGGER printers_event_insert_delete AFTER INSERT OR DELETE ON printers
  FOR EACH ROW EXECUTE FUNCTION events_printer_updated();
CREATE TRIGGER printers_event_update AFTER UPDATE ON printers
  FOR EACH ROW WHEN ((OLD.enabled, OLD.paused, OLD.redirect, OLD.error IS NULL, OLD.connection, OLD.flow, OLD.message)
    IS DISTINCT FROM (NEW.enabled, NEW.paused, NEW.redirect, NEW.error IS NULL, NEW.connection, NEW.flow, NEW.message))
  EXECUTE FUNCTION events_printer_updated();
`,
};
