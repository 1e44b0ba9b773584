-- delivered-and-next-many: delivered-and-next.sql for several printers in
-- one autocommitted statement (job-store.ts `deliveredAndNextMany`, gathered
-- by the dispatch engine's OutcomeBatcher): one round trip, one commit, one
-- executor start for all of them, still committed synchronously before any
-- of their runs sends a byte. At most one entry per printer.
--
--   :dispatch_lock_class  job-row.ts DISPATCH_LOCK_CLASS
--   :printed              printer-store.ts `printedCte` for the printers of
--                         the outcomes `u` with `touch` (the CTE `d`)
--   :waiting_heads_of_p   job-row.ts `waitingHeads('p.name')`
--   :waiting_heads_of_i   job-row.ts `waitingHeads('i.printer')`
--   :waiting              job-row.ts SQL_WAITING
--   :deliverable          job-row.ts SQL_DELIVERABLE
--   :job_columns_j        job-row.ts JOB_COLUMNS of `j`
--   :log_text_max         job-store.ts LOG_TEXT_MAX
--
-- Parameters (one element per printer, in order):
--   $1  text[]     the printer
--   $2  bigint[]   the job its run handed off
--   $3  bigint[]   its queue position (`seq`) at the hand-off
--   $4  int[]      its `attempts` at the hand-off
--   $5  text[]     the device's answer (the job's `message`)
--   $6  text[]     the log line (at most LOG_TEXT_MAX characters)
--   $7  boolean[]  also write the printer's `last_printed`
--
-- Locks, in order: the printers' dispatch locks, in the order of their keys
-- (two such statements never wait for each other in a cycle), before any row
-- is read or locked; the jobs' rows; the printers' rows to write, in name
-- order (as submit-jobs.sql share-locks them); the next head jobs' rows.
-- Guarantees: per printer, delivered-and-next.sql's: the guarded outcome,
-- its log line, the throttled `last_printed`, the hand-off of the head job,
-- with the same re-checks on the newest row versions. The outcome's jobs are
-- read by primary key (= ANY: so no generic plan made while print_jobs was
-- small settles on a sequential scan; test/areas/print/dispatch/
-- delivered-and-next-many.test.ts), the rest of the guard unindexed
-- (docs/architecture.md).
-- Returns: one row per printer: `k` (its position, from 1), `delivered`,
-- `drained` (as in delivered-and-next.sql) and, when a job was handed off,
-- the columns claim-next.sql returns (and `was`, `had`: its state and
-- attempts before).
WITH i AS (SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::int[], $5::text[], $6::text[], $7::boolean[])
    WITH ORDINALITY AS i(printer, id, seq, attempts, message, log, touch, k)),
lk AS MATERIALIZED (SELECT count(pg_advisory_xact_lock(:dispatch_lock_class, key)) IS NOT NULL AS locked
  FROM (SELECT DISTINCT hashtext(printer) AS key FROM i ORDER BY key) x),
u AS (UPDATE print_jobs j SET status = 'processed', updated = now(), finished = now(), message = i.message, handoff_at = NULL,
    stages = CASE WHEN j.keep_tempfiles THEN j.stages ELSE '[]'::jsonb END
  FROM i
  WHERE j.id = ANY($2::bigint[]) AND j.id = i.id
    AND (j.status, j.seq, j.attempts, j.handoff_at IS NOT NULL) IS NOT DISTINCT FROM ('processing', i.seq, i.attempts, true)
    AND (SELECT locked FROM lk)
  RETURNING j.id, j.printer, i.log, i.touch),
ul AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', log FROM u),
:printed,
p AS (SELECT name, connection, error FROM printers
  WHERE name IN (SELECT printer FROM i) AND redirect IS NULL AND enabled AND NOT paused AND (SELECT locked FROM lk)),
h AS (SELECT j.id, j.status, j.attempts FROM p
  CROSS JOIN LATERAL (SELECT id FROM (:waiting_heads_of_p) hd ORDER BY priority DESC, seq LIMIT 1) hd
  JOIN print_jobs j ON j.id = hd.id
  WHERE j.status IN :waiting AND (SELECT locked FROM lk) FOR UPDATE OF j),
c AS (UPDATE print_jobs j SET status = 'processing', updated = now(), handoff_at = now(), handoff_token = NULL, attempts = j.attempts + 1
  FROM h
  WHERE j.id = h.id AND h.status IN :deliverable
    AND NOT (h.status = 'postponed' AND j.next_attempt_at > now())
    AND (j.flow IS NULL OR j.stages @> '[{"stage": "preprocessed"}]'::jsonb)
  RETURNING :job_columns_j, h.status AS was, h.attempts AS had),
cl AS (INSERT INTO print_logs (job_id, printer, level, text)
  SELECT c.id, c.printer, 'info', left(c.was || ' -> processing: handed to '
    || CASE WHEN p.connection LIKE 'file:%' THEN 'the printer''s directory' ELSE p.connection END
    || CASE WHEN c.had > 0 THEN ' (attempt ' || (c.had + 1) || ')' ELSE '' END, :log_text_max) FROM c JOIN p ON p.name = c.printer)
SELECT i.k, EXISTS (SELECT 1 FROM u WHERE u.id = i.id) AS delivered, NOT EXISTS (SELECT 1 FROM (:waiting_heads_of_i) w) AS drained, n.*
  FROM i LEFT JOIN (SELECT c.*, p.connection AS printer_connection, p.error AS printer_error,
      (SELECT bytes FROM print_documents WHERE job_id = c.id) AS inline_document FROM c JOIN p ON p.name = c.printer) n ON n.printer = i.printer
  WHERE (SELECT locked FROM lk)
