-- submit-job: one submitted job, its log line and a small document, as the
-- parts of a statement the outbox fuses with the printer's dispatch wake-up
-- (job-store.ts `insertSubmittedJob`, `Outbox.addWith`: WITH RECURSIVE
-- <with>, main AS (<text>), <also>, the outbox row when <jobIf>).
--
--   :redirect_chain  printer-store.ts `redirectChain` from `sent_to`
--   :chain_end       printer-store.ts CHAIN_END: the chain's last printer
--   :job_columns     job-row.ts JOB_COLUMNS
--
-- Parameters:
--   $1  text   the printer the job was sent to
--   $2  text   where its redirect chain ended when the caller looked
--              (submit-target.sql): the job goes in only if it still does
--   $3  text   status (the initial state)
--   $4..$16    creator, owner, name, file_name, mime_type, size,
--              blob_sha256, copies, priority, checkin (jsonb), task (jsonb),
--              flow, retention_sec, as insert-job.sql's $4..$16
--   $17 text   the log line (at most LOG_TEXT_MAX characters)
--   $18 bytea  the document, stored with the job; NULL: in the blob store
--
-- Locks, in order: the printer $1, FOR SHARE (a delete or redirect of it
-- waits for this commit; the printers of its chain are read, not locked);
-- then the new rows.
-- Guarantees: no row when the printer is gone or its chain ends elsewhere
-- now (the caller decides again). The wake-up is not stored when the printer
-- is held (paused or disabled, not redirected): read under the share lock,
-- so its resume or re-enabling, which wakes it, commits after this job and
-- its dispatch run sees it.
-- @with
sent_to AS (SELECT name, redirect, paused, enabled FROM printers WHERE name = $1 FOR SHARE), :redirect_chain
-- @text
INSERT INTO print_jobs (status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
    copies, priority, checkin, task, flow, retention_sec)
  SELECT $3, chain_end.name, CASE WHEN chain_end.name = $1 THEN NULL ELSE $1 END, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16
    FROM :chain_end WHERE chain_end.name = $2
  RETURNING :job_columns
-- @also
logged AS (INSERT INTO print_logs (job_id, printer, level, text) SELECT id, printer, 'info', $17 FROM main),
inline_document AS (INSERT INTO print_documents (job_id, bytes) SELECT id, $18::bytea FROM main WHERE $18::bytea IS NOT NULL)
-- @jobIf
NOT EXISTS (SELECT 1 FROM sent_to WHERE redirect IS NULL AND (paused OR NOT enabled))
