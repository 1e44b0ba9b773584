-- open-run: a dispatch run's opening in the common case as one
-- autocommitted statement (job-store.ts `openRun`; one round trip instead of
-- BEGIN, the dispatch lock, the in-flight read, the claim and COMMIT):
-- the printer's dispatch lock when it is free, nothing of the printer in
-- flight, and the hand-off of its head job as claim-next.sql does it.
-- Committed synchronously, so the hand-off is durable before the caller
-- sends a byte. Anything else (the lock held by another run, a job found in
-- flight, a printer held, redirected or not yet due, a flow to run) hands
-- nothing off and changes nothing: the caller takes the transaction path
-- (the lock waited for, then every read after it).
--
--   :dispatch_lock_class  job-row.ts DISPATCH_LOCK_CLASS
--   :hand_off_head        includes/hand-off-head.sql with :after = `clear`,
--                         :handoff_token = `$2::uuid`
--   :waiting_heads        job-row.ts `waitingHeads('$1')`
--
-- Parameters:
--   $1  text  the printer
--   $2  uuid  the run's token, written with the hand-off (`handoff_token`:
--             a run whose answer was lost knows its own hand-off again)
--
-- Locks, in order: the printer's dispatch lock (advisory, transaction
-- scoped, tried: never waited for); the head job's row (FOR UPDATE).
-- Guarantees: nothing is handed off unless the lock was free and no job of
-- the printer is in flight in this statement's snapshot. Taken without a
-- wait, the lock was free when the snapshot was taken but for a run whose
-- commit became visible just after it (its lock released moments later);
-- the head's waiting state is evaluated again on the newest row version,
-- so such a run's hand-off is never handed off twice (the same re-check as
-- delivered-and-next.sql).
-- Returns: one row: `locked` (the lock was free), `clear` (and nothing in
-- flight), `drained` (no waiting job in the snapshot: the run may end; a job
-- committed after it is found by the run's tail check) and, when a job was
-- handed off, the columns claim-next.sql returns.
WITH lk AS (SELECT pg_try_advisory_xact_lock(:dispatch_lock_class, hashtext($1)) AS locked),
fl AS (SELECT (SELECT locked FROM lk)
    AND NOT EXISTS (SELECT 1 FROM print_jobs WHERE printer = $1 AND status IN ('preprocessing', 'processing')) AS clear),
:hand_off_head
SELECT (SELECT locked FROM lk) AS locked, (SELECT clear FROM fl) AS clear, NOT EXISTS (SELECT 1 FROM (:waiting_heads) w) AS drained, n.*
  FROM lk LEFT JOIN (SELECT c.*, p.connection AS printer_connection, p.error AS printer_error,
    (SELECT bytes FROM print_documents WHERE job_id = c.id) AS inline_document FROM c, p) n ON true
