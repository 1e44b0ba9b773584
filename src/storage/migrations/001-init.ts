import type { Migration } from './index.js';

/**
 * Repository entries, tasks with their lists (the "document in use" check
 * reads them), and repository commands.
 */
export const m001Init: Migration = {
  id: 1,
  name: 'init',
  sql: `
CREATE TABLE entries (
  uuid uuid PRIMARY KEY,
  sid text NOT NULL,
  parent uuid REFERENCES entries(uuid) ON DELETE CASCADE,
  name text NOT NULL,
  type text NOT NULL CHECK (type IN ('document', 'collection')),
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  creator text,
  owner text,
  created timestamptz NOT NULL DEFAULT now(),
  modified timestamptz NOT NULL DEFAULT now(),
  -- content of documents (null = no content yet)
  size bigint,
  mime_type text,
  sha256 text,
  -- changes whenever the content does: the sha256 when known, else a stat fingerprint
  -- of a file changed outside the API (filesystem connector); ETag and preview key
  content_version text,
  -- filesystem connector: path relative to its root ('' for the root)
  path text,
  -- previews are made by a worker from the content with hash preview_of
  preview_sha256 text,
  thumb_sha256 text,
  preview_of text,
  preview_error text
);
-- names are unique within a collection, as in a file system
CREATE UNIQUE INDEX entries_children ON entries (sid, parent, name);
CREATE INDEX entries_sid_modified ON entries (sid, modified);
CREATE UNIQUE INDEX entries_root ON entries (sid) WHERE parent IS NULL;
CREATE UNIQUE INDEX entries_fs_path ON entries (sid, path) WHERE path IS NOT NULL;
CREATE INDEX entries_sha256 ON entries (sha256) WHERE sha256 IS NOT NULL;
CREATE INDEX entries_pending_preview ON entries (sid) WHERE content_version IS NOT NULL AND preview_of IS DISTINCT FROM content_version;

CREATE TABLE tasks (
  tid uuid PRIMARY KEY,
  sid text NOT NULL,
  name text NOT NULL,
  type text,
  status text NOT NULL DEFAULT 'idle'
    CHECK (status IN ('idle', 'processing', 'paused', 'completed', 'failed', 'aborted')),
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  cstats jsonb NOT NULL DEFAULT '{}'::jsonb,
  creator text,
  owner text,
  created timestamptz NOT NULL DEFAULT now(),
  modified timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_sid ON tasks (sid, created);
CREATE INDEX tasks_status ON tasks (status);

-- Per-user lists and the input/output lists of tasks share one shape.
CREATE TABLE lists (
  lid uuid PRIMARY KEY,
  kind text NOT NULL CHECK (kind IN ('user', 'input', 'output')),
  tid uuid REFERENCES tasks(tid) ON DELETE CASCADE,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  creator text,
  owner text,
  created timestamptz NOT NULL DEFAULT now(),
  modified timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'user') = (tid IS NULL))
);
CREATE UNIQUE INDEX lists_task_kind ON lists (tid, kind) WHERE tid IS NOT NULL;

CREATE TABLE list_items (
  id uuid PRIMARY KEY,
  lid uuid NOT NULL REFERENCES lists(lid) ON DELETE CASCADE,
  position integer NOT NULL,
  href text NOT NULL,
  -- the repository document the href names, when it names one
  doc_sid text,
  doc_uuid uuid,
  metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
  created timestamptz NOT NULL DEFAULT now(),
  modified timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX list_items_lid ON list_items (lid, position);
CREATE INDEX list_items_doc ON list_items (doc_uuid) WHERE doc_uuid IS NOT NULL;

CREATE TABLE commands (
  cid uuid PRIMARY KEY,
  sid text NOT NULL,
  command text NOT NULL,
  parameters jsonb NOT NULL DEFAULT '{}'::jsonb,
  state text NOT NULL CHECK (state IN ('queued', 'running', 'success', 'failure')),
  progress_done bigint NOT NULL DEFAULT 0,
  progress_total bigint,
  result jsonb,
  error jsonb,
  creator text,
  created timestamptz NOT NULL DEFAULT now(),
  updated timestamptz NOT NULL DEFAULT now(),
  expires timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0
);
CREATE INDEX commands_pending ON commands (state) WHERE state IN ('queued', 'running');
CREATE INDEX commands_expires ON commands (expires);
`,
};
