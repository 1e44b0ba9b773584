-- delivered-and-next: a delivered job's outcome and its printer's next
-- hand-off as one autocommitted statement (job-store.ts `deliveredAndNext`;
-- one round trip per job, committed synchronously, so the hand-off is
-- durable before the caller sends a byte).
--
--   :dispatch_lock_class  job-row.ts DISPATCH_LOCK_CLASS
--   :printed              printer-store.ts `printedCte` for the printer $1
--                         (the CTE `d`)
--   :hand_off_head        includes/hand-off-head.sql with :after = the lock
--   :waiting_heads        job-row.ts `waitingHeads('$1')`
--
-- Parameters:
--   $1  text     the printer
--   $2  bigint   the job this run handed off
--   $3  bigint   its queue position (`seq`) at the hand-off
--   $4  int      its `attempts` at the hand-off
--   $5  text     the device's answer (the job's `message`)
--   $6  text     the log line (at most LOG_TEXT_MAX characters)
--   $7  boolean  also write the printer's `last_printed` (and clear its error)
--
-- Locks, in order: the printer's dispatch lock (advisory, transaction
-- scoped; before any row is read or locked); the job's row; the printer's
-- row when $7; the next head job's row.
-- Guarantees: the outcome is guarded by the hand-off: the job becomes
-- `processed` only while it is still `processing` with the same queue
-- position and attempt and the mark set (every hand-off counts an attempt,
-- and only a requeue, which renews `seq`, resets it), its stage files are
-- dropped unless kept and the mark cleared. The snapshot may predate the
-- wait for the lock, so the guard and the head's waiting state are evaluated
-- again on the newest row versions: a job another run or an operator changed
-- meanwhile is left alone, and no job is handed off twice.
-- Returns: one row: `delivered` (0: the guard failed), `drained` (the
-- printer had no waiting job in this statement's snapshot: the run may end
-- without asking why nothing was handed off; a job committed after the
-- snapshot is found by the run's tail check) and, when a job was handed
-- off, the columns claim-next.sql returns.
WITH lk AS (SELECT true AS locked FROM (SELECT pg_advisory_xact_lock(:dispatch_lock_class, hashtext($1))) x),
u AS (UPDATE print_jobs SET status = 'processed', updated = now(), finished = now(), message = $5, handoff_at = NULL,
    stages = CASE WHEN keep_tempfiles THEN stages ELSE '[]'::jsonb END
  WHERE id = $2 AND (status, seq, attempts, handoff_at IS NOT NULL) IS NOT DISTINCT FROM ('processing', $3::bigint, $4::int, true)
    AND (SELECT locked FROM lk)
  RETURNING id, printer),
ul AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', $6 FROM u),
:printed,
:hand_off_head
SELECT (SELECT count(*) FROM u)::int AS delivered, NOT EXISTS (SELECT 1 FROM (:waiting_heads) w) AS drained, n.* FROM lk LEFT JOIN (SELECT c.*, p.connection AS printer_connection, p.error AS printer_error,
    (SELECT bytes FROM print_documents WHERE job_id = c.id) AS inline_document FROM c, p) n ON true
