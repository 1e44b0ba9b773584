import { fieldMap, type FieldMap } from '../../../query/fields.js';
import { toSql } from '../../../query/to-sql.js';
import type { ListQuery } from '../../../query/tree.js';
import { throwSqlError } from '../../../errors/sql-errors.js';
import type { Sql } from '../../../storage/driver/database.js';

/**
 * The one writer of `messages` (migration 023; its triggers post the task
 * and print job messages in the transactions that commit those changes).
 * `expires` NULL means `date` plus the configured lifetime: every read and
 * the clean-up get that lifetime (whole seconds) and compute it in SQL.
 */

/** The message types (DESIGN.md section 6), as migration 023's CHECK has them. */
export const MESSAGE_TYPES = ['info', 'warning', 'error'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

export interface MessageRow {
  uuid: string;
  recipient: string;
  date: Date;
  type: MessageType;
  text: string;
  source: string | null;
  href: string | null;
  /** Stored expiry, or the default one computed from the lifetime. */
  expires: Date;
  metadata: Record<string, unknown>;
  creator: string;
  modified: Date;
}

export interface NewMessage {
  uuid: string;
  recipient: string;
  /** Absent: the database's now. */
  date?: string;
  type: MessageType;
  text: string;
  source?: string | null;
  href?: string | null;
  /** Absent: the default lifetime after `date`. */
  expires?: string | null;
  metadata?: Record<string, unknown>;
  creator: string;
}

export interface MessageChange {
  type?: MessageType;
  text?: string;
  source?: string | null;
  href?: string | null;
  expires?: string | null;
  /** Merged into the stored metadata key by key (top level), nothing removed. */
  metadata?: Record<string, unknown>;
}

/** `date + lifetime` as SQL: `lifetimeSec` is a whole number from the configuration, checked here. */
function expiresSql(lifetimeSec: number): string {
  if (!Number.isInteger(lifetimeSec) || lifetimeSec < 1) throw new Error(`message lifetime must be a positive whole number of seconds, not ${lifetimeSec}`);
  return `COALESCE(expires, date + ${lifetimeSec} * interval '1 second')`;
}

const columns = (lifetimeSec: number) =>
  `uuid::text AS uuid, recipient, date, type, text, source, href, ${expiresSql(lifetimeSec)} AS expires, metadata, creator, modified`;

/** The API fields of a message listing; other names are paths into `metadata`. */
export function messageFields(lifetimeSec: number): FieldMap {
  return fieldMap({
    uuid: { sql: 'uuid::text', type: 'text', notNull: true },
    user: { sql: 'recipient', type: 'text', notNull: true },
    date: { sql: 'date', type: 'date', notNull: true },
    type: { sql: 'type', type: 'text', notNull: true },
    text: { sql: 'text', type: 'text', notNull: true },
    source: { sql: 'source', type: 'text' },
    href: { sql: 'href', type: 'text' },
    expires: { sql: expiresSql(lifetimeSec), type: 'date', notNull: true },
    creator: { sql: 'creator', type: 'text', notNull: true },
    modified: { sql: 'modified', type: 'date', notNull: true },
    metadata: { sql: 'metadata', type: 'json' },
  }, 'metadata');
}

/**
 * Inserts a message unless one with its uuid exists; undefined then (nothing
 * changed). Posting twice with one fixed uuid posts once.
 */
export async function insertMessage(sql: Sql, m: NewMessage, lifetimeSec: number): Promise<MessageRow | undefined> {
  const { rows } = await sql.query<MessageRow>(
    `INSERT INTO messages (uuid, recipient, date, type, text, source, href, expires, metadata, creator)
     VALUES ($1, $2, COALESCE($3::timestamptz, now()), $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (uuid) DO NOTHING RETURNING ${columns(lifetimeSec)}`,
    [m.uuid, m.recipient, m.date ?? null, m.type, m.text, m.source ?? null, m.href ?? null, m.expires ?? null,
      JSON.stringify(m.metadata ?? {}), m.creator],
  ).catch(throwSqlError);
  return rows[0];
}

/** A message that has not expired, by uuid. */
export async function getMessage(sql: Sql, uuid: string, lifetimeSec: number, opts: { lock?: boolean } = {}): Promise<MessageRow | undefined> {
  const { rows } = await sql.query<MessageRow>(
    `SELECT ${columns(lifetimeSec)} FROM messages WHERE uuid = $1 AND ${expiresSql(lifetimeSec)} > now()${opts.lock ? ' FOR UPDATE' : ''}`,
    [uuid],
  );
  return rows[0];
}

/** How many messages `recipient` has, counted up to `cap` (expired ones not yet deleted included). */
export async function countMessages(sql: Sql, recipient: string, cap: number): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM (SELECT 1 FROM messages WHERE recipient = $1 LIMIT $2) AS m', [recipient, cap]);
  return rows[0]!.n;
}


/** A page of the unexpired messages of `recipients` (undefined: everybody's), filtered and sorted; newest first by default. */
export async function listMessages(sql: Sql, recipients: readonly string[] | undefined, q: ListQuery, lifetimeSec: number): Promise<MessageRow[]> {
  const params: unknown[] = [];
  const where = [`${expiresSql(lifetimeSec)} > now()`];
  if (recipients) {
    params.push(recipients);
    where.push('recipient = ANY($1::text[])');
  }
  const frag = toSql(q, messageFields(lifetimeSec), params, 'date DESC, uuid DESC');
  params.push(q.limit, q.offset);
  const { rows } = await sql.query<MessageRow>(
    `SELECT ${columns(lifetimeSec)} FROM messages WHERE ${[...where, ...frag.where].join(' AND ')}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

/** Changes the given fields (metadata merged at the top level); undefined when the message is gone. */
export async function patchMessage(sql: Sql, uuid: string, c: MessageChange, lifetimeSec: number): Promise<MessageRow | undefined> {
  const { rows } = await sql.query<MessageRow>(
    `UPDATE messages SET
       type = COALESCE($2, type), text = COALESCE($3, text),
       source = CASE WHEN $4::boolean THEN $5 ELSE source END,
       href = CASE WHEN $6::boolean THEN $7 ELSE href END,
       expires = CASE WHEN $8::boolean THEN $9::timestamptz ELSE expires END,
       metadata = metadata || $10::jsonb, modified = now()
     WHERE uuid = $1 RETURNING ${columns(lifetimeSec)}`,
    [uuid, c.type ?? null, c.text ?? null, c.source !== undefined, c.source ?? null, c.href !== undefined, c.href ?? null,
      c.expires !== undefined, c.expires ?? null, JSON.stringify(c.metadata ?? {})],
  ).catch(throwSqlError);
  return rows[0];
}

export async function deleteMessage(sql: Sql, uuid: string): Promise<boolean> {
  const { rowCount } = await sql.query('DELETE FROM messages WHERE uuid = $1', [uuid]);
  return rowCount > 0;
}

/** Deletes expired messages, at most `limit` per call (housekeeping runs again); how many went. */
export async function deleteExpired(sql: Sql, lifetimeSec: number, limit = 10_000): Promise<number> {
  const { rowCount } = await sql.query(
    // two index-served conditions (messages_expires, messages_date) instead of the COALESCE
    `DELETE FROM messages WHERE uuid IN (SELECT uuid FROM messages
       WHERE (expires IS NOT NULL AND expires <= now()) OR (expires IS NULL AND date <= now() - $2 * interval '1 second') LIMIT $1)`,
    [limit, lifetimeSec],
  );
  return rowCount;
}
