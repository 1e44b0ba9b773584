/**
 * The event types of `GET /v1/events` (DESIGN.md section 6). The triggers of
 * migration 024 raise the first four from the tables' state changes; panels
 * and messages raise theirs with `raise_event` in their own statements.
 */
export const EVENT_TYPES = ['task.updated', 'command.updated', 'job.updated', 'printer.updated', 'panel.create', 'message.created'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Sent when a stream cannot resume where the client asked (too old, unknown id, Redis and PostgreSQL both lost it). */
export const EVENTS_LOST = 'events.lost';

/** One event as it travels through Redis and to the API processes: who may see it and its small payload. */
export interface StreamEvent {
  /** Position in the stream (`events.seq`), the SSE `id`. */
  seq: number;
  type: string;
  /** The rights area deciding visibility. */
  area: string;
  object: string;
  /** When set, only this identity sees it. */
  recipient: string | null;
  creator: string | null;
  owner: string | null;
  /** The payload as JSON text, written to every client as it is (serialized once, not per client). */
  payload: string;
}

/** The JSON kept in the Redis stream for an event (its seq is the entry id). */
export function encodeEvent(e: Omit<StreamEvent, 'seq'>, rowId: number): string {
  return JSON.stringify({ i: rowId, t: e.type, a: e.area, o: e.object, r: e.recipient, c: e.creator, w: e.owner, p: e.payload });
}

/** The `events` row an entry of the stream was published from (the publisher's repair after a crash). */
export function rowIdOf(data: string): number | undefined {
  try {
    const i = (JSON.parse(data) as { i?: unknown }).i;
    return typeof i === 'number' && Number.isSafeInteger(i) ? i : undefined;
  } catch {
    return undefined;
  }
}

/** An entry of the stream back into an event; undefined for one this version cannot read. */
export function decodeEvent(seq: number, data: string): StreamEvent | undefined {
  try {
    const d = JSON.parse(data) as Record<string, unknown>;
    const str = (v: unknown) => (typeof v === 'string' ? v : null);
    if (typeof d.t !== 'string' || typeof d.a !== 'string' || typeof d.o !== 'string' || typeof d.p !== 'string') return undefined;
    return { seq, type: d.t, area: d.a, object: d.o, recipient: str(d.r), creator: str(d.c), owner: str(d.w), payload: d.p };
  } catch {
    return undefined;
  }
}
