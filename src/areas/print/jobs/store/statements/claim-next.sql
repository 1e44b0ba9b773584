-- claim-next: the hand-off of the printer $1's head job in the common case
-- (job-store.ts `claimHead`; the dispatch engine decides the other cases
-- step by step), under the printer's dispatch lock taken by an earlier
-- statement of the same transaction, so this statement's snapshot sees
-- every earlier run's commit.
--
--   :hand_off_head  includes/hand-off-head.sql with :after = true
--
-- Parameters:
--   $1  text  the printer
--   $2  uuid  a run opening's token written with the hand-off, or NULL
--             (`handoff_token`, open-run.sql)
--
-- Locks: the head job's row (FOR UPDATE), inside the caller's dispatch lock.
-- Returns: no row when nothing was handed off (nothing changed); else the
-- job (JOB_COLUMNS), its printer's connection and last error, and its
-- document when it is stored with the job (one round trip less per
-- delivery). The caller commits synchronously before the first byte goes
-- out.
WITH :hand_off_head
SELECT c.*, p.connection AS printer_connection, p.error AS printer_error,
    (SELECT bytes FROM print_documents WHERE job_id = c.id) AS inline_document
  FROM c, p
