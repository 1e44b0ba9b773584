-- insert-job: a job and, when small, its document, inserted as given
-- (job-store.ts `insertJob`): the submission's fallback, in a transaction
-- that has share-locked the printer and resolved its redirect itself.
--
--   :job_columns  job-row.ts JOB_COLUMNS
--
-- Parameters:
--   $1  text     status (the job's initial state)
--   $2  text     printer (the end of the redirect chain)
--   $3  text     redirected_from (the printer it was sent to; NULL: none)
--   $4  text     creator        $5  text  owner
--   $6  text     name           $7  text  file_name
--   $8  text     mime_type      $9  bigint  size
--   $10 text     blob_sha256
--   $11 int      copies         $12 int   priority
--   $13 jsonb    checkin        $14 jsonb task (NULL: none)
--   $15 text     flow (NULL: none)
--   $16 int      retention_sec (NULL: the default of its final state)
--   $17 bytea    the document, stored with the job (print_documents); NULL:
--                it is in the blob store
--
-- Locks: the new rows only.
-- Returns: the job (JOB_COLUMNS).
WITH main AS (INSERT INTO print_jobs (status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
    copies, priority, checkin, task, flow, retention_sec)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING :job_columns),
inline_document AS (INSERT INTO print_documents (job_id, bytes) SELECT id, $17::bytea FROM main WHERE $17::bytea IS NOT NULL)
SELECT * FROM main
