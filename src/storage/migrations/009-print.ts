import type { Migration } from './index.js';

/**
 * The Print Job Management API's tables (DESIGN.md section 7).
 *
 * print_jobs: one row per print job.
 *   id               bigint identity, the `{id}` of /v3/jobs/{id}
 *   status           job state (src/areas/print-jobs/job-states.ts): waitpreprocessing,
 *                    preprocessing, waitprocessing, processing, postponed, paused,
 *                    processed, canceled, error
 *   printer          name of the printer the job prints on (after redirects); no foreign
 *                    key, so the history of a deleted printer's jobs stays readable
 *   redirected_from  the printer the job was sent to when a redirect rerouted it
 *   creator, owner   the `user` of the API (token identity) and an optional owner (x-owner)
 *   name, file_name  display name and original file name
 *   mime_type, size  of the submitted document
 *   blob_sha256      the submitted document in the blob store (DATA_DIR/blobs)
 *   copies, priority copies to print; priority 0..100 (higher first, default 50)
 *   pages            page count once known (pageinfo / preprocessing), else null
 *   checkin          { type: api | task | hotfolder | testpage, source }
 *   task             { sid, tid, item } when the job came from a task, else null
 *   flow             name of the flow run in preprocessing, null = none
 *   stages           intermediate files: [{ stage, sha256, size, mimeType, created }]
 *                    (e.g. stage 'preprocessed' = the flow's output, printed instead of
 *                    the original); dropped at the end unless keep_tempfiles
 *   keep_tempfiles   PUT /v3/jobs/{id}/tempfiles { keep }
 *   retention_sec    per-job retention override (seconds after finishing), null = default
 *                    for the final state (print_configs / config)
 *   finished         when the job reached a final state (retention counts from here)
 *   message          last backend or processing message shown with the job (error reason)
 *   created, updated timestamps; `updated` changes on every state change
 *   Dispatch (the engine's columns):
 *   seq              FIFO order within a priority: taken from print_jobs_seq at submit,
 *                    and again on repeat, resume, move and redirect (back of the queue)
 *   attempts         delivery attempts so far (postponed retries)
 *   next_attempt_at  earliest time of the next attempt of a postponed job
 *   handoff_at       set in its own committed transaction right before the bytes go to
 *                    the device, cleared with the acknowledgement; a job found in
 *                    `processing` with handoff_at set after a crash ends in `error`
 *                    ("delivery uncertain"), never printed twice silently
 *
 * printers: one row per printer, `name` any Unicode (URL-encoded in paths).
 *   connection   file:///dir, socket://host:9100, ipp://, ipps://, lpr://host/queue
 *   description, location, enabled (false = disabled: holds its queue like paused)
 *   flow         default flow of jobs submitted to it without one
 *   paused       PUT pause/resume (src/areas/printers/printer-states.ts)
 *   redirect     name of the printer its waiting and new jobs go to, null = none
 *   message      { text, user, date } or null
 *   physical     last checkPhysical result { ok, checked, message, ... } or null
 *   error        last device error the engine saw { message, at }, cleared on success
 *   last_printed when it last finished a job
 *
 * print_flows: named declarative pipelines { name, type, description, steps }.
 * print_configs: the key/value configuration of /v3/configs/.
 * print_logs: the job and printer log, one function writes it (print-log.ts):
 *   job_id null for printer-only entries; printer always set.
 */
export const m009Print: Migration = {
  id: 9,
  name: 'print',
  sql: `
CREATE SEQUENCE print_jobs_seq;

CREATE TABLE print_jobs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  status text NOT NULL CHECK (status IN ('waitpreprocessing', 'preprocessing', 'waitprocessing', 'processing',
    'postponed', 'paused', 'processed', 'canceled', 'error')),
  printer text NOT NULL,
  redirected_from text,
  creator text,
  owner text,
  name text NOT NULL,
  file_name text,
  mime_type text NOT NULL,
  size bigint NOT NULL,
  blob_sha256 text NOT NULL,
  copies integer NOT NULL DEFAULT 1 CHECK (copies BETWEEN 1 AND 9999),
  priority integer NOT NULL DEFAULT 50 CHECK (priority BETWEEN 0 AND 100),
  pages integer,
  checkin jsonb NOT NULL DEFAULT '{"type":"api"}'::jsonb,
  task jsonb,
  flow text,
  stages jsonb NOT NULL DEFAULT '[]'::jsonb,
  keep_tempfiles boolean NOT NULL DEFAULT false,
  retention_sec integer CHECK (retention_sec >= 0),
  finished timestamptz,
  message text,
  created timestamptz NOT NULL DEFAULT now(),
  updated timestamptz NOT NULL DEFAULT now(),
  seq bigint NOT NULL DEFAULT nextval('print_jobs_seq'),
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz,
  handoff_at timestamptz
);
-- the dispatch pick: a printer's next job by priority, then FIFO
CREATE INDEX print_jobs_dispatch ON print_jobs (printer, status, priority DESC, seq);
-- listings: by printer and state newest first (the benchmark's filter), by state, by user, by time
CREATE INDEX print_jobs_printer_status_created ON print_jobs (printer, status, created DESC, id DESC);
CREATE INDEX print_jobs_status_created ON print_jobs (status, created DESC, id DESC);
CREATE INDEX print_jobs_creator_created ON print_jobs (creator, created DESC);
CREATE INDEX print_jobs_owner_created ON print_jobs (owner, created DESC) WHERE owner IS NOT NULL;
CREATE INDEX print_jobs_created ON print_jobs (created DESC);
-- postponed retries and housekeeping by finishing time
CREATE INDEX print_jobs_next_attempt ON print_jobs (next_attempt_at) WHERE status = 'postponed';
CREATE INDEX print_jobs_finished ON print_jobs (finished) WHERE finished IS NOT NULL;
CREATE INDEX print_jobs_blob ON print_jobs (blob_sha256);
-- blob garbage collection asks whether a stage file is still referenced
CREATE INDEX print_jobs_stages ON print_jobs USING gin (stages jsonb_path_ops);

CREATE TABLE printers (
  name text PRIMARY KEY,
  connection text NOT NULL,
  description text,
  location text,
  enabled boolean NOT NULL DEFAULT true,
  flow text,
  paused boolean NOT NULL DEFAULT false,
  redirect text,
  message jsonb,
  physical jsonb,
  error jsonb,
  last_printed timestamptz,
  creator text,
  created timestamptz NOT NULL DEFAULT now(),
  updated timestamptz NOT NULL DEFAULT now(),
  CHECK (redirect IS DISTINCT FROM name)
);
CREATE INDEX printers_redirect ON printers (redirect) WHERE redirect IS NOT NULL;

CREATE TABLE print_flows (
  name text PRIMARY KEY,
  type text NOT NULL DEFAULT 'custom' CHECK (type IN ('standard', 'custom')),
  description text,
  steps jsonb NOT NULL DEFAULT '[]'::jsonb,
  creator text,
  created timestamptz NOT NULL DEFAULT now(),
  updated timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE print_configs (
  key text PRIMARY KEY,
  value jsonb NOT NULL,
  updated timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE print_logs (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id bigint REFERENCES print_jobs(id) ON DELETE CASCADE,
  printer text,
  at timestamptz NOT NULL DEFAULT clock_timestamp(),
  level text NOT NULL DEFAULT 'info' CHECK (level IN ('debug', 'info', 'warning', 'error')),
  text text NOT NULL
);
CREATE INDEX print_logs_job ON print_logs (job_id, id) WHERE job_id IS NOT NULL;
CREATE INDEX print_logs_printer ON print_logs (printer, id);
`,
};
