import type { Sql } from '../storage/driver/database.js';

/**
 * Counts the re-creation of one run (`instance`) of a job and returns the new
 * count; undefined when that run was counted already (another process's
 * reconciler is replacing it). Counted over a minute ago and still there: that
 * process died between counting and replacing, so it is counted again.
 */
export async function countRecreation(sql: Sql, jobId: string, instance: string, reason: string): Promise<number | undefined> {
  const { rows } = await sql.query<{ count: number }>(
    `INSERT INTO job_recreations (job_id, count, last_reason, last_instance) VALUES ($1, 1, $2, $3)
     ON CONFLICT (job_id) DO UPDATE SET count = job_recreations.count + 1, last_reason = $2, last_instance = $3, updated = now()
       WHERE job_recreations.last_instance <> $3 OR job_recreations.updated < now() - interval '1 minute'
     RETURNING count`,
    [jobId, reason.slice(0, 500), instance],
  );
  return rows[0]?.count;
}

/** Drops counts not touched for a week (their rows finished long ago). */
export async function forgetRecreations(sql: Sql, olderThanDays = 7): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM job_recreations WHERE updated < now() - make_interval(days => $1)`, [olderThanDays]);
  return rowCount;
}
