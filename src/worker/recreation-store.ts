import type { Sql } from '../storage/driver/database.js';

/** Counts one more re-creation of a job and returns the new count. */
export async function countRecreation(sql: Sql, jobId: string, reason: string): Promise<number> {
  const { rows } = await sql.query<{ count: number }>(
    `INSERT INTO job_recreations (job_id, count, last_reason) VALUES ($1, 1, $2)
     ON CONFLICT (job_id) DO UPDATE SET count = job_recreations.count + 1, last_reason = $2, updated = now()
     RETURNING count`,
    [jobId, reason.slice(0, 500)],
  );
  return rows[0]!.count;
}

/** Drops counts not touched for a week (their rows finished long ago). */
export async function forgetRecreations(sql: Sql, olderThanDays = 7): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM job_recreations WHERE updated < now() - make_interval(days => $1)`, [olderThanDays]);
  return rowCount;
}
