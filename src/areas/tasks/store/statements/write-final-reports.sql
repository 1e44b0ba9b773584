-- Final reports (done, failed, aborted) of items of several tasks (one report per task), each with
-- the connector's effect given as data and its task's status derivation, in one autocommitted
-- statement: `writeFinalReports` (task-store.ts).
--
-- Parameters (one array element per report, in the same order):
--   $1 uuid[]  tid            $5 text[]  job_id   (the connector's job id)
--   $2 uuid[]  item           $6 text[]  state    (the connector's words, at most 200 characters)
--   $3 int[]   run            $7 text[]  href     (null: the stored one stays)
--   $4 text[]  outcome        $8 text[]  message  (at most 2000 characters)
--   $9 text    the status of a task with an item not done ('failed')
--   $10 text   the status of a task whose items are all done ('completed')
--   $11 text[] effect sid, $12 text[] effect op ('increment' | 'put' | null: none),
--   $13 text[] effect key, $14 text[] effect value (the JSON of a put, the amount of an increment)
--
-- The effects placeholder (in double braces) stands for the effects' common table expressions (`eff`, `eff_inc`, `eff_put`):
-- `effectsSql` of connectors/lifecycle/state-store.ts, the writer of `connector_state`, over the
-- reports that were applied.
--
-- Locks, in order:
--   1. every reported task's row (FOR NO KEY UPDATE), all of them before anything else, by tid (the
--      order `start-runs.sql` takes them in, and before the items', as the actions take them), so
--      neither a pause or abort nor another such statement ever deadlocks with it;
--   2. the reported items' rows of `task_items`;
--   3. the effects' keys of `connector_state`, in key order;
--   4. the tasks' rows again, to settle them (held already).
--
-- Guarantees, per report, exactly as on its own:
--   - the report is stored only on a row still open under its run (a final row refuses a second
--     report, a row of another run any report); `applied` says whether it was;
--   - the effect is applied only when the report is (effects of one key add up; of several puts of
--     one key the last wins);
--   - when no other item of the task is open, the task moves from processing (under that run) to
--     completed or failed; `settled` is its new status, null when it did not move;
--   - an applied done or failed report counts into its task's progress (`progress_done`, `progress_failed`).
-- The open outcomes ('queued', 'running', 'paused') and the final ones ('done', 'failed', 'aborted')
-- are those of the state table (actions/task-states.ts; a test holds the two together).
WITH i AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
         $11::text[], $12::text[], $13::text[], $14::text[]) WITH ORDINALITY AS i(tid, item, run, outcome, job_id, state, href, message, e_sid, e_op, e_key, e_value, n)),
     k AS MATERIALIZED (SELECT tid FROM tasks WHERE tid IN (SELECT tid FROM i) ORDER BY tid FOR NO KEY UPDATE),
     -- every task row is locked before anything else is touched (an InitPlan runs before the first row)
     lk AS (SELECT count(*) AS locked FROM k),
     rep AS (
       UPDATE task_items t SET outcome = i.outcome, job_id = i.job_id, state = i.state, href = COALESCE(i.href, t.href), message = i.message, updated = now()
       FROM i JOIN k ON k.tid = i.tid
       WHERE (SELECT locked FROM lk) IS NOT NULL AND t.tid = i.tid AND t.item = i.item AND t.run = i.run AND t.outcome IN ('queued', 'running', 'paused') AND i.outcome IN ('done', 'failed', 'aborted')
       RETURNING i.n),
     {{effects}},
     -- one UPDATE per task row (a statement cannot change a row twice): the progress count of every
     -- applied report, and the status when the task settles (on the row's latest version)
     fin AS (
       SELECT i.tid, i.item, i.run, i.outcome,
         NOT EXISTS (SELECT 1 FROM task_items WHERE tid = i.tid AND item <> i.item AND outcome IN ('queued', 'running', 'paused')) AS alone,
         i.outcome <> 'done' OR EXISTS (SELECT 1 FROM task_items WHERE tid = i.tid AND item <> i.item AND outcome <> 'done') AS failing
       FROM i JOIN rep ON rep.n = i.n),
     settled AS (
       UPDATE tasks x SET
         progress_done = x.progress_done + (fin.outcome = 'done')::int,
         progress_failed = x.progress_failed + (fin.outcome = 'failed')::int,
         status = CASE WHEN x.status = 'processing' AND x.run = fin.run AND fin.alone THEN CASE WHEN fin.failing THEN $9 ELSE $10 END ELSE x.status END,
         modified = CASE WHEN x.status = 'processing' AND x.run = fin.run AND fin.alone THEN now() ELSE x.modified END
       FROM fin
       WHERE x.tid = fin.tid
       -- settled: the status it moved to; a task that did not move is in neither (an open item of its
       -- run means processing or paused, so completed or failed here is a move of this statement)
       RETURNING x.tid, CASE WHEN fin.alone AND x.run = fin.run AND x.status IN ($9, $10) THEN x.status END AS status)
     SELECT EXISTS (SELECT 1 FROM rep WHERE rep.n = i.n) AS applied, (SELECT status FROM settled WHERE settled.tid = i.tid) AS settled
     FROM i ORDER BY i.n
