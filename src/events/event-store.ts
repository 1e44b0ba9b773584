import type { Sql, Tx } from '../storage/driver/database.js';
import type { StreamEvent } from './event.js';

/**
 * The one writer of `events` (migration 024) apart from `raise_event` and
 * the triggers that call it: the publisher's seqs and housekeeping.
 */

/** The channel `raise_event` notifies at commit (payload: the schema). */
export const EVENTS_CHANNEL = 'wcr_events';

const COLS = `seq, type, area, object, recipient, creator, owner, payload::text AS payload`;

interface Row { id?: string | number; seq: string | number | null; type: string; area: string; object: string; recipient: string | null; creator: string | null; owner: string | null; payload: string }

const toEvent = (r: Row): StreamEvent => ({
  seq: Number(r.seq), type: r.type, area: r.area, object: r.object, recipient: r.recipient, creator: r.creator, owner: r.owner, payload: r.payload,
});

/**
 * Raises an event in the caller's transaction (`raise_event`, migration 024):
 * it commits or rolls back with the change it reports. With `recipient`,
 * only that identity receives it (`panel.create`).
 */
export async function raiseEvent(tx: Tx, e: { type: string; area: string; object: string; payload: unknown; recipient?: string }): Promise<void> {
  await tx.query('SELECT raise_event($1, $2, $3, $4::jsonb, $5)', [e.type, e.area, e.object, JSON.stringify(e.payload), e.recipient ?? null]);
}

/**
 * A publisher round's opening as one statement of its transaction: the
 * publisher's turn (advisory, per schema, tried: one publisher at a time
 * gives seqs, so they are dense and in publish order; `turn` false when
 * another process holds it, whose round takes our rows too), and with it the
 * highest seq given so far (0 for none) and up to `limit` unpublished events
 * in insertion order. The rows are read only once the turn is ours; those
 * committed after this statement wait for the next round.
 */
export async function openPublisherRound(tx: Tx, limit: number): Promise<{ turn: boolean; max: number; rows: (StreamEvent & { id: number })[] }> {
  const { rows } = await tx.query<Row & { turn: boolean; max: string | null }>(
    `WITH t AS (SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':events-publisher')) AS turn)
     SELECT t.turn, m.max, u.id, u.seq, u.type, u.area, u.object, u.recipient, u.creator, u.owner, u.payload::text AS payload
       FROM t CROSS JOIN (SELECT max(seq)::text AS max FROM events WHERE (SELECT turn FROM t)) m
       LEFT JOIN LATERAL (SELECT * FROM events WHERE seq IS NULL AND (SELECT turn FROM t) ORDER BY id LIMIT $1) u ON true
      ORDER BY u.id`, [limit]);
  const first = rows[0]!;
  return {
    turn: first.turn,
    max: Number(first.max ?? 0),
    rows: rows.filter((r) => r.id !== null && r.id !== undefined).map((r) => ({ ...toEvent(r), id: Number(r.id) })),
  };
}

/** The highest seq given so far (0 for none). */
export async function maxSeq(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ m: string | null }>('SELECT max(seq)::text AS m FROM events');
  return Number(rows[0]!.m ?? 0);
}

/** Events not published yet, in insertion order, with their row ids. */
export async function unpublished(tx: Tx, limit: number): Promise<(StreamEvent & { id: number })[]> {
  const { rows } = await tx.query<Row>(`SELECT id, ${COLS} FROM events WHERE seq IS NULL ORDER BY id LIMIT $1`, [limit]);
  return rows.map((r) => ({ ...toEvent(r), id: Number(r.id) }));
}

/** Records the seqs events were published under (in Redis already; `takePublisherTurn` held). */
export async function assignSeqs(tx: Tx, ids: readonly number[], seqs: readonly number[]): Promise<void> {
  if (ids.length === 0) return;
  await tx.query(
    `UPDATE events e SET seq = v.seq FROM unnest($1::bigint[], $2::bigint[]) AS v(id, seq) WHERE e.id = v.id AND e.seq IS NULL`,
    [ids, seqs],
  );
}

/** Published events after `after`, in stream order (a resume that Redis cannot serve). */
export async function eventsAfter(sql: Sql, after: number, limit: number): Promise<StreamEvent[]> {
  const { rows } = await sql.query<Row>(`SELECT ${COLS} FROM events WHERE seq > $1 ORDER BY seq LIMIT $2`, [after, limit]);
  return rows.map(toEvent);
}

/** The oldest seq still within `retentionSec` (the stream is trimmed below it); undefined when none is. */
export async function oldestRetainedSeq(sql: Sql, retentionSec: number): Promise<number | undefined> {
  const { rows } = await sql.query<{ m: string | null }>(
    `SELECT min(seq)::text AS m FROM events WHERE seq IS NOT NULL AND created >= now() - make_interval(secs => $1)`, [retentionSec]);
  return rows[0]!.m === null ? undefined : Number(rows[0]!.m);
}

/**
 * Housekeeping: published events older than `retentionSec`. Unpublished ones
 * wait for Redis, however old. The newest published event always stays: it
 * is the high-water mark the next seq follows when Redis lost the stream too,
 * so seqs never start again below ids that clients hold.
 */
export async function deleteOldEvents(sql: Sql, retentionSec: number): Promise<number> {
  const { rowCount } = await sql.query(
    `DELETE FROM events WHERE seq IS NOT NULL AND created < now() - make_interval(secs => $1)
       AND seq < (SELECT max(seq) FROM events)`, [retentionSec]);
  return rowCount;
}
