import type { Migration } from './index.js';

/**
 * What the intake connectors (hot folder, scheduled CSV / RList imports) took,
 * one row per file: the claim is written before anything of the file is
 * stored, so a crash at any later step finds it and finishes the same file
 * with the same document and task ids instead of taking it again.
 *
 *   state    claimed -> stored -> done, or failed (moved to error/), or the row
 *            is deleted when the file changed under the reader (taken later)
 *   source   the watched folder (absolute path) or the import URL
 *   name     the file name in it
 *   size, mtime_ms, ino   what the file looked like when claimed (ino is
 *            "dev:ino"; a file replaced at the same name is another file)
 *   doc_uuid, tid         the document and task ids, fixed at the claim
 *
 * At most one unfinished claim per (service, source, name); finished rows
 * stay for the connector's `keepDays` (a CSV import also looks them up by
 * content hash, so the same file is never imported twice).
 */
export const m018IntakeFiles: Migration = {
  id: 18,
  name: 'intake-files',
  sql: `
CREATE TABLE intake_files (
  id bigserial PRIMARY KEY,
  sid text NOT NULL,
  source text NOT NULL,
  name text NOT NULL,
  size bigint NOT NULL,
  mtime_ms double precision,
  ino text,
  sha256 text NOT NULL,
  state text NOT NULL CHECK (state IN ('claimed', 'stored', 'done', 'failed')),
  doc_uuid text,
  doc_name text,
  tid text,
  holder text,
  reason jsonb,
  claimed timestamptz NOT NULL DEFAULT now(),
  stored timestamptz,
  finished timestamptz
);
CREATE UNIQUE INDEX intake_files_active ON intake_files (sid, source, name) WHERE state IN ('claimed', 'stored');
CREATE INDEX intake_files_content ON intake_files (sid, source, name, sha256);
CREATE INDEX intake_files_finished ON intake_files (sid, finished) WHERE finished IS NOT NULL;
`,
};
