import type { Sql } from '../../../storage/driver/database.js';

/**
 * The one store of the `sessions` table (migration 022): the OIDC sessions
 * seen per user (`sid` claim, else token id), each live until its token
 * expires or, while an event stream holds it open, until `stream_until`.
 */

/** Records a session seen with a token valid until `expires` (a later token of the same session extends it). */
export async function recordSession(sql: Sql, user: string, session: string, expires: Date): Promise<void> {
  await sql.query(
    `INSERT INTO sessions (user_key, session, expires) VALUES ($1, $2, $3)
     ON CONFLICT (user_key, session) DO UPDATE SET expires = greatest(sessions.expires, EXCLUDED.expires)`,
    [user, session, expires],
  );
}

/** Keeps sessions live until `until` (at least) for open event streams, whatever their tokens say: one statement for all of them. */
export async function holdSessions(sql: Sql, held: readonly { user: string; session: string }[], until: Date): Promise<void> {
  if (held.length === 0) return;
  await sql.query(
    `INSERT INTO sessions (user_key, session, expires, stream_until)
     SELECT u, s, $3, $3 FROM unnest($1::text[], $2::text[]) AS h(u, s)
     ON CONFLICT (user_key, session) DO UPDATE SET stream_until = greatest(sessions.stream_until, EXCLUDED.stream_until)`,
    [held.map((h) => h.user), held.map((h) => h.session), until],
  );
}

/** Distinct live sessions of a user known by any of `identities`. */
export async function countSessions(sql: Sql, identities: readonly string[]): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(DISTINCT session)::int AS n FROM sessions
     WHERE user_key = ANY($1::text[]) AND greatest(expires, stream_until) > now()`,
    [identities],
  );
  return rows[0]!.n;
}

/** Deletes sessions dead for longer than `graceSec`; how many went. */
export async function deleteDeadSessions(sql: Sql, graceSec: number): Promise<number> {
  const { rowCount } = await sql.query(
    `DELETE FROM sessions WHERE expires < now() - make_interval(secs => $1)
       AND (stream_until IS NULL OR stream_until < now() - make_interval(secs => $1))`,
    [graceSec],
  );
  return rowCount;
}
