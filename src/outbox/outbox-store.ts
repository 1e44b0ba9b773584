import type { Sql } from '../storage/driver/database.js';
import type { FusedStatement } from './outbox.js';

/** One job waiting to be moved into its queue. */
export interface OutboxRow {
  id: number;
  name: string;
  data: unknown;
}

/**
 * Stores a job; with `leaseSec`, already claimed by the writing process's relay.
 * Returns the row id, or undefined when the job was there already.
 */
export async function insertOutbox(sql: Sql, name: string, jobId: string, data: unknown, leaseSec: number | null): Promise<number | undefined> {
  const { rows } = await sql.query<{ id: number }>(
    `INSERT INTO outbox (name, job_id, data, claimed_until)
     VALUES ($1, $2, $3, CASE WHEN $4::int IS NULL THEN NULL ELSE now() + make_interval(secs => $4::int) END)
     ON CONFLICT (job_id) DO NOTHING RETURNING id`,
    [name, jobId, JSON.stringify(data), leaseSec],
  );
  return rows[0]?.id;
}

/**
 * Stores several jobs in one statement (rows as one JSON array, not one
 * round trip each); with `leaseSec`, already claimed. Returns the rows
 * inserted (jobs there already are skipped).
 */
export async function insertOutboxMany(sql: Sql, jobs: readonly { name: string; jobId: string; data: unknown }[], leaseSec: number | null): Promise<OutboxRow[]> {
  if (jobs.length === 0) return [];
  const { rows } = await sql.query<OutboxRow>(
    `INSERT INTO outbox (name, job_id, data, claimed_until)
     SELECT j.name, j.job_id, j.data, CASE WHEN $2::int IS NULL THEN NULL ELSE now() + make_interval(secs => $2::int) END
     FROM jsonb_to_recordset($1::jsonb) AS j(name text, job_id text, data jsonb)
     ON CONFLICT (job_id) DO NOTHING RETURNING id, name, data`,
    [JSON.stringify(jobs.map((j) => ({ name: j.name, job_id: j.jobId, data: j.data }))), leaseSec],
  );
  return rows;
}

/**
 * Runs one data-modifying statement (with its RETURNING list) and stores a job
 * in the same statement: both or neither, without a transaction and in one
 * round trip. A statement that changes no row (an UPDATE whose WHERE matched
 * nothing) stores no job either, nor does one whose `jobIf` is false. The job's parameters follow the statement's. Returns the
 * statement's rows, the outbox row id (undefined when the job was there
 * already or not wanted) and whether the job was wanted.
 */
export async function withOutbox<R extends object>(
  sql: Sql, statement: FusedStatement, name: string, jobId: string, data: unknown, leaseSec: number | null,
): Promise<{ rows: R[]; id: number | undefined; wanted: boolean }> {
  const n = statement.params.length;
  const wanted = statement.jobIf ?? 'true';
  const { rows } = await sql.query<R & { outbox_id: number | null; outbox_wanted: boolean }>(
    `WITH ${statement.with ? `RECURSIVE ${statement.with},` : ''} main AS (${statement.text}),${statement.also ? ` ${statement.also},` : ''}
     job AS (
       INSERT INTO outbox (name, job_id, data, claimed_until)
       SELECT $${n + 1}, $${n + 2}, $${n + 3}, CASE WHEN $${n + 4}::int IS NULL THEN NULL ELSE now() + make_interval(secs => $${n + 4}::int) END
       WHERE EXISTS (SELECT 1 FROM main) AND (${wanted})
       ON CONFLICT (job_id) DO NOTHING RETURNING id)
     SELECT main.*, (SELECT id FROM job) AS outbox_id, (${wanted}) AS outbox_wanted FROM main`,
    [...statement.params, name, jobId, JSON.stringify(data), leaseSec],
  );
  const id = rows[0]?.outbox_id ?? undefined;
  return { rows: rows.map(({ outbox_id: _, outbox_wanted: _w, ...row }) => row as unknown as R), id, wanted: rows[0]?.outbox_wanted ?? false };
}

/**
 * `withOutbox` for a statement that calls for several jobs whose payloads
 * only the statement knows (a run number it increments, chunk numbers it
 * assigns): `jobs` selects `(job_id text, data jsonb)` rows from `main` and
 * the statement's CTEs, and each becomes an outbox row in the same
 * statement. Both or neither, one round trip. The job's name follows the
 * statement's parameters. Returns the statement's rows and the outbox rows
 * inserted (jobs there already are skipped).
 */
export async function withOutboxEach<R extends object>(
  sql: Sql, statement: FusedStatement, jobs: string, name: string, leaseSec: number | null,
): Promise<{ rows: R[]; jobs: OutboxRow[] }> {
  const n = statement.params.length;
  const { rows } = await sql.query<R & { outbox_jobs: { id: number; data: unknown }[] }>(
    eachText(statement, jobs, n), [...statement.params, name, leaseSec]);
  const inserted = rows[0]?.outbox_jobs ?? [];
  return {
    rows: rows.map(({ outbox_jobs: _, ...row }) => row as unknown as R),
    jobs: inserted.map((j) => ({ id: Number(j.id), name, data: j.data })),
  };
}

/**
 * The text of `withOutboxEach`, kept per statement (bounded, as the driver's
 * prepared statements are): a statement's parts are constants whose hashes V8
 * keeps, where the text built again per call is a new 3 kB string to hash and
 * compare.
 */
const eachTexts = new Map<string, { with?: string; also?: string; select?: string; jobs: string; n: number; text: string }>();
function eachText(statement: FusedStatement, jobs: string, n: number): string {
  const hit = eachTexts.get(statement.text);
  if (hit && hit.with === statement.with && hit.also === statement.also && hit.select === statement.select && hit.jobs === jobs && hit.n === n) return hit.text;
  const text = `WITH ${statement.with ? `RECURSIVE ${statement.with},` : ''} main AS (${statement.text}),${statement.also ? ` ${statement.also},` : ''}
     job AS (
       INSERT INTO outbox (name, job_id, data, claimed_until)
       SELECT $${n + 1}, w.job_id, w.data, CASE WHEN $${n + 2}::int IS NULL THEN NULL ELSE now() + make_interval(secs => $${n + 2}::int) END
       FROM (${jobs}) AS w (job_id, data)
       ON CONFLICT (job_id) DO NOTHING RETURNING id, data)
     SELECT main.*,${statement.select ? ` ${statement.select},` : ''} (SELECT COALESCE(jsonb_agg(jsonb_build_object('id', id, 'data', data) ORDER BY id), '[]'::jsonb) FROM job) AS outbox_jobs
     FROM main`;
  if (eachTexts.size < 100) eachTexts.set(statement.text, { with: statement.with, also: statement.also, select: statement.select, jobs, n, text });
  return text;
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

/** The schema this connection works in: the outbox's NOTIFY payload, which other schemas of the same database also hear. */
export async function currentSchema(sql: Sql): Promise<string> {
  const { rows } = await sql.query<{ schema: string }>('SELECT current_schema() AS schema');
  return rows[0]!.schema;
}
