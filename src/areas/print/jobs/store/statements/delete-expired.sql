-- delete-expired: housekeeping's delete of jobs whose retention is over
-- (job-store.ts `deleteExpiredJobs`): a final state counts from `finished`,
-- `paused` from `updated`; a job's own `retention_sec` wins over the
-- defaults (config `print.retention`). Their log lines and inline documents
-- go with them (ON DELETE CASCADE); blobs with the next blob collection.
--
-- Parameters:
--   $1  int  seconds a processed job is kept    $2  int  a canceled one
--   $3  int  a job in error                     $4  int  a paused one
--   $5  int  at most this many jobs in one statement
--
-- Locks: the deleted rows.
-- Returns: nothing (the row count is the number deleted).
DELETE FROM print_jobs WHERE id IN (
  SELECT id FROM print_jobs
  WHERE (status IN ('processed', 'canceled', 'error') AND finished IS NOT NULL
         AND finished + make_interval(secs => COALESCE(retention_sec, CASE status WHEN 'processed' THEN $1::int WHEN 'canceled' THEN $2::int ELSE $3::int END)) < now())
     OR (status = 'paused' AND updated + make_interval(secs => COALESCE(retention_sec, $4::int)) < now())
  LIMIT $5)
