import type { Migration } from './index.js';

/**
 * `message.created` in the event stream (`GET /v1/events`, migration 024): a
 * message insert raises it in the inserting statement's transaction, for the
 * recipient only, whoever posted it (the API, a connector's `MessagePort`,
 * migration 023's triggers for a failed task or a print job in error), and a
 * rolled-back insert raises nothing. An insert that found its uuid taken
 * (`ON CONFLICT DO NOTHING`: a retried post) inserts no row and raises
 * nothing. The payload is the message's head; the client GETs the rest.
 *
 * It replaces migration 023's `NOTIFY message_created`, which each process
 * heard and turned into a call of its own (lost while a listener
 * reconnected): the event row is the one way an event is raised.
 */
export const m027MessageEvents: Migration = {
  id: 27,
  name: 'message-events',
  sql: `
DROP TRIGGER messages_created ON messages;
DROP FUNCTION announce_message();

CREATE FUNCTION events_message_created() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM raise_event('message.created', 'messages', NEW.uuid::text,
    jsonb_build_object('uuid', NEW.uuid, 'type', NEW.type, 'text', NEW.text, 'source', NEW.source,
      'href', NEW.href, 'date', NEW.date),
    NEW.recipient);
  RETURN NULL;
END $$;
CREATE TRIGGER messages_event AFTER INSERT ON messages FOR EACH ROW EXECUTE FUNCTION events_message_created();
`,
};
