/**
 * `cstats` as a column of a task query (`FROM tasks`): the reported item rows
 * as one JSON object keyed by job id, shaped as `presentCstats` shapes them.
 * Task reads select it in place of a column of the task's own row, so a
 * thousand items reporting at once never contend on the task's row.
 */
export const CSTATS_COLUMN = `COALESCE((SELECT jsonb_object_agg(i.job_id, jsonb_build_object(
    'state', COALESCE(i.state, i.outcome), 'item', i.item, 'href', i.href,
    'updated', to_char(i.updated AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'message', i.message))
  FROM task_items i WHERE i.tid = tasks.tid AND i.job_id IS NOT NULL), '{}'::jsonb) AS cstats`;
