import type { Sql } from '../storage/driver/database.js';

/** One job waiting to be moved into its queue. */
export interface OutboxRow {
  id: number;
  name: string;
  data: unknown;
}

export async function insertOutbox(sql: Sql, name: string, jobId: string, data: unknown): Promise<void> {
  await sql.query(
    'INSERT INTO outbox (name, job_id, data) VALUES ($1, $2, $3) ON CONFLICT (job_id) DO NOTHING',
    [name, jobId, JSON.stringify(data)],
  );
}

/**
 * Claims up to `limit` rows for `leaseSec`, oldest first. SKIP LOCKED lets
 * several relays claim at once without waiting on each other or sharing a row;
 * the lease (not a held transaction) keeps others off while the jobs are
 * enqueued, so no database connection waits on Redis.
 */
export async function claimOutbox(sql: Sql, limit: number, leaseSec: number): Promise<OutboxRow[]> {
  const { rows } = await sql.query<OutboxRow>(
    `UPDATE outbox SET claimed_until = now() + make_interval(secs => $2)
     WHERE id IN (
       SELECT id FROM outbox WHERE claimed_until IS NULL OR claimed_until < now()
       ORDER BY id LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING id, name, data`,
    [limit, leaseSec],
  );
  return rows.sort((a, b) => a.id - b.id);
}

/** Rows whose jobs are in their queues. */
export async function deleteOutbox(sql: Sql, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await sql.query('DELETE FROM outbox WHERE id = ANY($1::bigint[])', [ids]);
}

/** Rows whose enqueue failed: free for the next attempt (by any relay). */
export async function releaseOutbox(sql: Sql, ids: readonly number[]): Promise<void> {
  if (ids.length > 0) await sql.query('UPDATE outbox SET claimed_until = NULL WHERE id = ANY($1::bigint[])', [ids]);
}

/** Rows waiting (metrics, tests). */
export async function outboxSize(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM outbox');
  return rows[0]!.n;
}
