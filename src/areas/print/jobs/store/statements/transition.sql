-- transition: a job's state change and its log line in one statement
-- (job-store.ts `transitionJob`, which first checks JOB_TRANSITIONS; the
-- dispatch engine makes two per job, hence one round trip).
--
--   :job_columns  job-row.ts JOB_COLUMNS
--
-- Parameters:
--   $1  bigint   the job
--   $2  text     the new state
--   $3  boolean  the new state is final: `finished` is now, else NULL
--   $4  boolean  set `message` to $5 (false: keep it)
--   $5  text     the message (NULL clears it)
--   $6  text     the printer it moves to (NULL: stays)
--   $7  boolean  set `redirected_from` to $8 (false: keep it)
--   $8  text     the printer it was sent to (NULL: none)
--   $9  boolean  requeue: a new place at the back of its queue (a new
--                `seq`) and a new delivery (the hand-off mark cleared)
--   $10 boolean  reset `attempts` and `next_attempt_at`
--   $11 text     the hand-off mark: 'set' (now), 'clear', NULL (kept)
--   $12 boolean  count a delivery attempt
--   $13 bigint   `next_attempt_at` this many milliseconds ahead (NULL: kept)
--   $14 text     the log line's level
--   $15 text     the log line (at most LOG_TEXT_MAX characters)
--
-- Locks: the job's row (the caller has locked it FOR UPDATE already and
-- decided on the state it read).
-- Returns: the job after the change (JOB_COLUMNS); no row when it is gone.
WITH u AS (UPDATE print_jobs SET status = $2, updated = now(),
    finished = CASE WHEN $3 THEN now() ELSE NULL END,
    message = CASE WHEN $4::boolean THEN $5 ELSE message END,
    printer = COALESCE($6, printer),
    redirected_from = CASE WHEN $7::boolean THEN $8 ELSE redirected_from END,
    seq = CASE WHEN $9 THEN nextval('print_jobs_seq') ELSE seq END,
    attempts = CASE WHEN $10 THEN 0 WHEN $12 THEN attempts + 1 ELSE attempts END,
    next_attempt_at = CASE WHEN $10 THEN NULL WHEN $13::bigint IS NOT NULL THEN now() + $13::bigint * interval '1 millisecond' ELSE next_attempt_at END,
    -- a requeued job (repeat, resume, move) starts a new delivery
    handoff_at = CASE WHEN $9 THEN NULL ELSE CASE $11::text WHEN 'set' THEN now() WHEN 'clear' THEN NULL ELSE handoff_at END END,
    -- only a run's opening writes a token with its hand-off (open-run.sql): any other change of the mark drops it
    handoff_token = CASE WHEN $9 OR $11::text IN ('set', 'clear') THEN NULL ELSE handoff_token END
  WHERE id = $1 RETURNING :job_columns),
l AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, $14, $15 FROM u)
SELECT * FROM u
