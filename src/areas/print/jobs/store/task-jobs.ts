import type { Sql } from '../../../../storage/driver/database.js';
import { JOB_COLUMNS, type PrintJobRow } from './job-row.js';

/**
 * Reads of the print jobs of tasks (the `print` task connector's jobs, whose
 * `task` is `{ sid, tid, item, run }`, migration 021) and the lock their
 * reports to task items take. Every write of print_jobs is job-store.ts's.
 * The lookups by task go through `print_jobs_task_item` (their `task ?
 * 'run'` is the index's predicate).
 */

/** The advisory lock class of the reports of one job to its task item (`lockJobReports`). */
const TASK_REPORT_LOCK_CLASS = 7210;

/**
 * Serializes the reports of one job to its task item for the rest of the
 * transaction: a report reads the job after it holds the lock, so of two
 * reports of one job the later one writes the newer state, never the older.
 */
export async function lockJobReports(tx: Sql, jobId: string): Promise<void> {
  await tx.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [TASK_REPORT_LOCK_CLASS, jobId]);
}

/** A task's job with what its report needs: the last log line, the task's status and run. */
export interface TaskJobRow extends PrintJobRow {
  last_log: string | null;
  task_status: string | null;
  task_run: number | null;
}

/** The job with its last log line and its task's status and run (null: the task is gone). */
export async function taskJob(sql: Sql, id: string): Promise<TaskJobRow | undefined> {
  const { rows } = await sql.query<TaskJobRow>(
    `SELECT ${JOB_COLUMNS.split(', ').map((c) => `j.${c}`).join(', ')},
       (SELECT text FROM print_logs WHERE job_id = j.id ORDER BY id DESC LIMIT 1) AS last_log,
       k.status AS task_status, k.run AS task_run
     FROM print_jobs j LEFT JOIN tasks k ON k.tid = (j.task->>'tid')::uuid
     WHERE j.id = $1`, [id]);
  return rows[0];
}

/** The newest job of a task item (any run), or undefined. */
export async function latestItemJob(sql: Sql, tid: string, item: string): Promise<PrintJobRow | undefined> {
  const { rows } = await sql.query<PrintJobRow>(
    `SELECT ${JOB_COLUMNS} FROM print_jobs WHERE task ? 'run' AND task->>'tid' = $1 AND task->>'item' = $2 ORDER BY id DESC LIMIT 1`,
    [tid, item]);
  return rows[0];
}

/** The newest job of each item of a task. */
export async function latestTaskJobs(sql: Sql, tid: string): Promise<PrintJobRow[]> {
  const { rows } = await sql.query<PrintJobRow>(
    `SELECT DISTINCT ON (task->>'item') ${JOB_COLUMNS} FROM print_jobs WHERE task ? 'run' AND task->>'tid' = $1
     ORDER BY task->>'item', id DESC`, [tid]);
  return rows;
}

/** A number for a report asked for outside a change of the job (`print.task-report`'s `n`), from migration 021's sequence. */
export async function nextReportNumber(sql: Sql): Promise<number> {
  const { rows } = await sql.query<{ n: string }>(`SELECT nextval('print_task_report_seq') AS n`);
  return Number(rows[0]!.n);
}

/** A task item whose handed-off job's state its row does not show (a report lost with Redis), for the reconciler. */
export interface StaleTaskItem {
  job: string;
  sid: string;
  tid: string;
  item: string;
  run: number;
}

/**
 * Items of processing or paused tasks, handed off to a print job of their
 * run, whose row shows another state than the job has and would take its
 * report (a paused row takes only a held or final job's): a report job Redis
 * lost after the relay handed it over. At most `limit`.
 */
export async function staleTaskItems(sql: Sql, limit: number): Promise<StaleTaskItem[]> {
  const { rows } = await sql.query<StaleTaskItem>(
    `SELECT j.id::text AS job, k.sid, t.tid::text AS tid, t.item::text AS item, t.run
     FROM task_items t
     JOIN tasks k ON k.tid = t.tid AND k.run = t.run AND k.status IN ('processing', 'paused')
     JOIN print_jobs j ON j.task ? 'run' AND j.task->>'tid' = t.tid::text AND j.task->>'item' = t.item::text AND j.task->>'run' = t.run::text
     WHERE t.handed_off AND t.outcome IN ('queued', 'running', 'paused') AND t.state IS DISTINCT FROM j.status
       AND (t.outcome <> 'paused' OR j.status IN ('paused', 'processed', 'canceled', 'error'))
     ORDER BY t.tid, t.item LIMIT $1`, [limit]);
  return rows;
}
