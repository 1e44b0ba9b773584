/**
 * The `message.created` call site (issue 23 item 6): called once a message
 * has been committed, whoever posted it (the API, a connector through its
 * `MessagePort`, or a database trigger: a task that failed, a print job in
 * error). Announcements come from PostgreSQL's `NOTIFY message_created`
 * (migration 023), which every process running `MessageService.start` hears:
 * a message committed in any process is announced in each of them, so an
 * implementation delivers to its own process's clients (or drops duplicates
 * by `message.uuid`, the natural event id). Never called for a rolled-back
 * insert. A lost database connection loses the announcements made meanwhile
 * (the listener says so with `resync`).
 */
export interface MessageEvents {
  /** A committed message for `user` (its API body, as `GET /v1/messages/{uuid}` shows it). */
  created(user: string, message: Record<string, unknown>): void;
  /** The listener reconnected: announcements made while it was away are lost (a stream may say so). */
  resync?(): void;
}

/** Until the event stream is wired: nothing listens, nothing is announced. */
export const NO_MESSAGE_EVENTS: MessageEvents = Object.freeze({ created: () => undefined });
