-- Starts and resumes of several tasks (one request per task) in one statement: the common table
-- expressions of `startRunStatement` (task-store.ts). The outbox fuses them with the statement's
-- `main` SELECT and one `task.items` outbox row per chunk (`Outbox.addEachWith`). It is sent in a
-- transaction whose first statement took the tasks' row locks (`lockForStart`): this statement's
-- snapshot then holds every input change that committed under those locks (a statement that waits
-- for a lock itself still reads the snapshot it began with, and would leave such items out).
--
-- Parameters:
--   $1 jsonb  the requests, an array of { n int (1-based place), tid uuid, sid text,
--             "from" text[] (statuses the action is allowed from), "to" text (the status it leads to),
--             owned text[] (identities the task's creator or owner must be among; null: any task),
--             payload jsonb ({ sid, tid } of the job), prefix text (`task.<tid>.`, the job id's start) }
--   $2 int    items per `task.items` job (a run's chunk size)
--
-- Locks, in order:
--   1. every requested task's row (FOR NO KEY UPDATE), all of them before anything else, by tid
--      (the order `write-final-reports.sql` takes them in), so no two such statements, nor one and a
--      final report, wait for each other in a cycle; held already when `lockForStart` ran first;
--   2. the rows of `task_items` of the tasks that moved (deleted, inserted or updated).
--
-- Guarantees, per request, exactly as on its own:
--   - the task moves (`moved`: a new run) only when it is in the service, in a status of "from",
--     and the caller's rights allow it (owned), so nothing changes unless the action is allowed;
--   - every input item that is not done is queued again under the new run, in chunks of $2 by list
--     position; rows of items no longer in the input list go; done items keep their row and are not
--     redone, also when their final report committed while this statement ran;
--   - `chunks` holds each moved task's chunk numbers, one job each;
--   - the moved task's progress is counted again: total = its input items, done = those done,
--     failed = 0 (every failed item is queued again). No final report of it commits meanwhile:
--     every statement writing one takes the task's row lock first.
r AS (SELECT * FROM jsonb_to_recordset($1::jsonb)
       AS r(n int, tid uuid, sid text, "from" text[], "to" text, owned text[], payload jsonb, prefix text)),
     -- the tasks' rows by their ids (= ANY of an array: the planner expects a few rows and takes the primary
     -- key; joined to r, whose row count it cannot know, it took a sequential scan of the table instead)
     lk AS (SELECT count(*) AS locked FROM (SELECT tid FROM tasks WHERE tid = ANY(ARRAY(SELECT tid FROM r)) ORDER BY tid FOR NO KEY UPDATE) x),
     moved AS (
       -- progress: the input items, those done (kept), none failed (queued again)
       UPDATE tasks k SET status = r."to", run = k.run + 1, modified = now(),
         progress_total = COALESCE((SELECT l.item_count FROM lists l WHERE l.tid = k.tid AND l.kind = 'input'), 0),
         progress_done = (SELECT count(*) FROM lists l JOIN list_items li ON li.lid = l.lid JOIN task_items t ON t.tid = l.tid AND t.item = li.id
           WHERE l.tid = k.tid AND l.kind = 'input' AND t.outcome = 'done'),
         progress_failed = 0
       FROM r
       WHERE (SELECT locked FROM lk) IS NOT NULL AND k.tid = ANY(ARRAY(SELECT tid FROM r)) AND k.tid = r.tid AND k.sid = r.sid AND k.status = ANY(r."from")
         AND (r.owned IS NULL OR k.creator = ANY(r.owned) OR k.owner = ANY(r.owned))
       RETURNING r.n, k.tid, k.run, k.creator, k.owner),
     input AS (
       SELECT moved.tid, li.id, li.position FROM moved JOIN lists l ON l.tid = moved.tid AND l.kind = 'input' JOIN list_items li ON li.lid = l.lid),
     gone AS (
       DELETE FROM task_items t USING moved WHERE t.tid = moved.tid
         AND NOT EXISTS (SELECT 1 FROM input WHERE input.tid = t.tid AND input.id = t.item)),
     todo AS (
       SELECT input.tid, input.id, (row_number() OVER (PARTITION BY input.tid ORDER BY input.position, input.id) - 1) / $2 AS chunk
       FROM input LEFT JOIN task_items t ON t.tid = input.tid AND t.item = input.id
       WHERE t.outcome IS NULL OR t.outcome <> 'done'),
     queued AS (
       INSERT INTO task_items (tid, item, run, chunk, outcome, state, message)
       SELECT todo.tid, todo.id, moved.run, todo.chunk, 'queued', 'queued', NULL FROM todo JOIN moved ON moved.tid = todo.tid
       ON CONFLICT (tid, item) DO UPDATE SET run = EXCLUDED.run, chunk = EXCLUDED.chunk, outcome = 'queued',
         handed_off = false, state = 'queued', message = NULL, updated = now()
       -- checked on the row's latest version: an item whose final report committed while this
       -- statement ran (after its snapshot) stays done and is not run again
       WHERE task_items.outcome <> 'done'
       RETURNING tid, chunk),
     chunks AS (SELECT DISTINCT tid, chunk::int AS chunk FROM queued)
