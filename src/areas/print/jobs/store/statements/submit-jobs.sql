-- submit-jobs: several submissions as one statement (job-store.ts
-- `insertSubmittedJobs`, gathered by submit-print-job.ts), in parts the
-- outbox fuses with the wake-ups (`Outbox.addEachWith`: WITH RECURSIVE
-- <with>, main AS (<text>), <also>, the outbox rows of <jobs>; each answer
-- row with <select>). Per submission what submit-job.sql does, and the
-- lookup submit-target.sql does before it: the flow (the printer's or the
-- one named; with check_flow, no row when it does not exist) and from it the
-- initial state (job-states.ts `initialJobState`).
--
--   :job_columns   job-row.ts JOB_COLUMNS
--   :log_text_max  job-store.ts LOG_TEXT_MAX
--
-- Parameters (one element per submission, in order; $21 is one value):
--   $1  text[]     sent_to: the printer the job was sent to
--   $2  text[]     target: where its chain must end for the job to go in
--   $3  boolean[]  own_flow: the job runs its printer's flow ...
--   $4  text[]     given_flow: ... else this one (NULL: none)
--   $5  boolean[]  check_flow: no row when the flow does not exist
--   $6..$17        creator, owner, name, file_name, mime_type, size (bigint),
--                  sha256, copies (int), priority (int), checkin (json
--                  text), task (json text), retention_sec (int)
--   $18 text[]     log_start: the log line up to the redirect and the state
--   $19 int[]      doc_off, $20 int[] doc_len: the document's place in $21
--                  (NULL: in the blob store)
--   $21 bytea      the small documents, one after another
--   $22 text[]     wake_id: `jobIdFor('print.dispatch', { printer: target })`
--
-- Locks, in order: the printers the jobs were sent to, FOR SHARE, in name
-- order (two such statements, or one and an outcome statement that locks
-- printers in name order, never wait for each other in a cycle); then the
-- new rows. The job ids and queue positions are drawn before the insert, so
-- each answer row can say which submission it is.
-- Guarantees: a submission without an answer row was not inserted (its
-- printer is unknown, gone or redirected elsewhere now, or its flow
-- unknown). One wake-up per target printer, in job id order, not stored when
-- every job for it was sent to a held printer (as in submit-job.sql).
-- @with
i AS (SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::text[], $5::boolean[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
    $11::bigint[], $12::text[], $13::int[], $14::int[], $15::text[], $16::text[], $17::int[], $18::text[], $19::int[], $20::int[], $22::text[])
    WITH ORDINALITY AS i(sent_to, target, own_flow, given_flow, check_flow, creator, owner, name, file_name, mime_type, size, sha256, copies, priority,
      checkin, task, retention_sec, log_start, doc_off, doc_len, wake_id, k)),
sent_to AS (SELECT name, redirect, paused, enabled, flow FROM printers WHERE name IN (SELECT sent_to FROM i) ORDER BY name FOR SHARE),
chain(start, name, redirect, depth) AS (
  SELECT name, name, redirect, 0 FROM sent_to
  UNION ALL
  SELECT c.start, p.name, p.redirect, c.depth + 1 FROM printers p JOIN chain c ON p.name = c.redirect WHERE c.depth < 64),
chain_end AS (SELECT DISTINCT ON (start) start, name FROM chain ORDER BY start, depth DESC),
ok AS MATERIALIZED (SELECT o.*, CASE WHEN coalesce(o.flow, '') = '' THEN 'waitprocessing' ELSE 'waitpreprocessing' END AS status,
    nextval(pg_get_serial_sequence('print_jobs', 'id')) AS id, nextval('print_jobs_seq') AS seq
  FROM (SELECT i.*, CASE WHEN i.own_flow THEN s.flow ELSE i.given_flow END AS flow
    FROM i JOIN sent_to s ON s.name = i.sent_to JOIN chain_end e ON e.start = i.sent_to AND e.name = i.target ORDER BY i.k) o
  WHERE NOT o.check_flow OR coalesce(o.flow, '') = '' OR EXISTS (SELECT 1 FROM print_flows f WHERE f.name = o.flow))
-- @text
INSERT INTO print_jobs (id, seq, status, printer, redirected_from, creator, owner, name, file_name, mime_type, size, blob_sha256,
    copies, priority, checkin, task, flow, retention_sec)
  OVERRIDING SYSTEM VALUE
  SELECT id, seq, status, target, CASE WHEN target = sent_to THEN NULL ELSE sent_to END, creator, owner, name, file_name, mime_type, size, sha256,
    copies, priority, checkin::jsonb, task::jsonb, flow, retention_sec
    FROM ok ORDER BY k
  RETURNING :job_columns
-- @also
logged AS (INSERT INTO print_logs (job_id, printer, level, text)
  SELECT id, target, 'info', left(log_start || CASE WHEN target = sent_to THEN '' ELSE ' (sent to "' || sent_to || '", redirected)' END || ' -> ' || status, :log_text_max)
    FROM ok ORDER BY k),
inline_document AS (INSERT INTO print_documents (job_id, bytes) SELECT id, substring($21::bytea FROM doc_off + 1 FOR doc_len) FROM ok WHERE doc_len IS NOT NULL)
-- @jobs
SELECT DISTINCT ok.wake_id, jsonb_build_object('printer', ok.target) FROM ok JOIN sent_to s ON s.name = ok.sent_to
  WHERE NOT (s.redirect IS NULL AND (s.paused OR NOT s.enabled)) ORDER BY 1
-- @select
(SELECT k FROM ok WHERE ok.id = main.id) AS k
