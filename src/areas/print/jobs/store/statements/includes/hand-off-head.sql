-- hand-off-head (included): the hand-off of the printer $1's head job as
-- common table expressions, for claim-next.sql and delivered-and-next.sql,
-- in the case that needs no decision in code: the printer is enabled, not
-- paused, not redirected, and its head job (priority desc, then queue
-- position) is due and needs no flow. Marks the hand-off (state
-- `processing`, `handoff_at`, `handoff_token`, one more attempt) and writes
-- its log line.
-- Yields `c` (the job handed off, JOB_COLUMNS; or no row) and `p` (its
-- printer's name, connection and last error).
--
--   :after           a condition evaluated before any row is read or locked
--                    (the dispatch lock taken by the same statement), or true
--   :waiting_heads   job-row.ts `waitingHeads('$1')`
--   :waiting         job-row.ts SQL_WAITING
--   :deliverable     job-row.ts SQL_DELIVERABLE
--   :job_columns_j   job-row.ts JOB_COLUMNS of `j`
--   :log_text_max    job-store.ts LOG_TEXT_MAX
--   :handoff_token   the run's token written with the hand-off (open-run.sql:
--                    `$2::uuid`), or NULL
--
-- Locks: the head job's row, FOR UPDATE, after the dispatch lock. The
-- statement's snapshot may predate a wait for that lock, so the head's
-- waiting state is evaluated again on the newest row version (a job another
-- run took meanwhile is left alone; nothing is handed off twice).
p AS (SELECT name, connection, error FROM printers
  WHERE name = $1 AND redirect IS NULL AND enabled AND NOT paused AND :after),
h AS (SELECT id, status, attempts FROM print_jobs
  WHERE id = (SELECT id FROM (:waiting_heads) h ORDER BY priority DESC, seq LIMIT 1)
    AND status IN :waiting AND :after FOR UPDATE),
c AS (UPDATE print_jobs j SET status = 'processing', updated = now(), handoff_at = now(), handoff_token = :handoff_token, attempts = j.attempts + 1
  FROM h, p
  WHERE j.id = h.id AND h.status IN :deliverable
    AND NOT (h.status = 'postponed' AND j.next_attempt_at > now())
    AND (j.flow IS NULL OR j.stages @> '[{"stage": "preprocessed"}]'::jsonb)
  RETURNING :job_columns_j),
cl AS (INSERT INTO print_logs (job_id, printer, level, text)
  SELECT c.id, c.printer, 'info', left(h.status || ' -> processing: handed to '
    || CASE WHEN p.connection LIKE 'file:%' THEN 'the printer''s directory' ELSE p.connection END
    || CASE WHEN h.attempts > 0 THEN ' (attempt ' || (h.attempts + 1) || ')' ELSE '' END, :log_text_max) FROM c, h, p)
