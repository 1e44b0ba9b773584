import type { Migration } from './index.js';

/**
 * Each print job's listed JSON text kept with the job, so that a listing reads
 * one column per job instead of building some thirty pieces of text per row
 * at every request (docs/benchmarks.md, "Print listing: each job's JSON kept
 * with the job"):
 *
 *   listing  `{"id":…,"status":…, … ,"stages":…` — the job as present.ts
 *            `presentJob` shows it, from `id` to `stages`, without the closing
 *            brace: the fields after it (`retention`, which depends on the
 *            configuration's defaults, `attempts`, `nextAttempt`) are added
 *            by the listing's statement (print-job-store.ts `rowJson`). The
 *            text is print-job-store.ts LISTED_FIELDS' for the same fields,
 *            with the timestamps already in `Date#toISOString`'s form
 *            (`to_char`; no DateStyle dependence) and jsonb still between
 *            LISTING_MARKs (present.ts makes it compact).
 *
 * Written by a BEFORE INSERT OR UPDATE trigger from the row being written, so
 * no statement can leave it stale; NULL never (the listing falls back to
 * building the text when it is). This function is the migration's own copy
 * of those fields: a change to LISTED_FIELDS needs a migration replacing it
 * (test/areas/print-jobs/job-listing-column.test.ts compares the two on rows
 * of every shape). Readers of whole rows name their columns (print-job-store.ts
 * JOB_COLUMNS) and never fetch this one.
 */
export const m017PrintJobListing: Migration = {
  id: 17,
  name: 'print-job-listing',
  sql: `
ALTER TABLE print_jobs ADD COLUMN listing text;

CREATE FUNCTION print_jobs_listing() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.listing := concat(
    '{"id":', NEW.id::text,
    ',"status":"', NEW.status,
    '","printer":', to_json(NEW.printer)::text,
    ',"user":', coalesce(to_json(NEW.creator)::text, 'null'),
    ',"owner":', coalesce(to_json(NEW.owner)::text, 'null'),
    ',"name":', to_json(NEW.name)::text,
    ',"fileName":', coalesce(to_json(NEW.file_name)::text, 'null'),
    ',"mimeType":', to_json(NEW.mime_type)::text,
    ',"size":', NEW.size::text,
    ',"copies":', NEW.copies::text,
    ',"priority":', NEW.priority::text,
    ',"pages":', coalesce(NEW.pages::text, 'null'),
    ',"checkin":', chr(1) || 'c' || NEW.checkin::text || chr(1),
    ',"task":', coalesce(chr(1) || 'c' || NEW.task::text || chr(1), 'null'),
    ',"flow":', coalesce(to_json(NEW.flow)::text, 'null'),
    ',"redirectedFrom":', coalesce(to_json(NEW.redirected_from)::text, 'null'),
    ',"message":', coalesce(to_json(NEW.message)::text, 'null'),
    ',"created":"', to_char(NEW.created AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    '","updated":"', to_char(NEW.updated AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
    '","finished":', coalesce('"' || to_char(NEW.finished AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"', 'null'),
    ',"keepTempfiles":', NEW.keep_tempfiles::text,
    ',"stages":', CASE WHEN NEW.stages = '[]'::jsonb THEN '[]' ELSE chr(1) || 's' || NEW.stages::text || chr(1) END);
  RETURN NEW;
END $$;
CREATE TRIGGER print_jobs_listing BEFORE INSERT OR UPDATE ON print_jobs
  FOR EACH ROW EXECUTE FUNCTION print_jobs_listing();

-- the jobs there are: the trigger writes each one's text
UPDATE print_jobs SET listing = NULL;
`,
};
