import type { Migration } from './index.js';

/**
 * The rest of the workflow API's per-user and shared state (issue 23):
 *
 * panels        user-defined UI panels (`/v1/panels`). `config` is the
 *               ConfigItem as the client sent it, less the generated fields;
 *               `name` is unique per holder (the owner, else the creator),
 *               enforced by `panels_holder_name`; `task_id` the task a panel
 *               was created for (`taskId`), kept as given: a task deleted
 *               later leaves the panel as it was.
 * config_items  the configuration tree (`/v1/config`): one row per item,
 *               `path` its slash-separated address ("a/b/c"). An item may
 *               also have items below it (a registry key, not a file).
 *               `COLLATE "C"`: the subtree of "a/b" is the range
 *               ["a/b/", "a/b0") by bytes, one index range scan, and `keys`
 *               come back in byte order.
 * sessions      OIDC sessions seen (`GET /v1/sessions`): one row per user and
 *               session (`sid` claim, else token id), live until the token's
 *               `expires` or, while an event stream holds it, `stream_until`.
 */
export const m022PanelsConfigSessions: Migration = {
  id: 22,
  name: 'panels-config-sessions',
  sql: `
CREATE TABLE panels (
  pid uuid PRIMARY KEY,
  name text NOT NULL,
  config jsonb NOT NULL,
  task_id uuid,
  creator text NOT NULL,
  owner text,
  created timestamptz NOT NULL DEFAULT now(),
  modified timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX panels_holder_name ON panels ((coalesce(owner, creator)), name);
CREATE INDEX panels_creator ON panels (creator, created);
CREATE INDEX panels_owner ON panels (owner, created) WHERE owner IS NOT NULL;

CREATE TABLE config_items (
  path text COLLATE "C" PRIMARY KEY,
  value jsonb NOT NULL,
  modified timestamptz NOT NULL DEFAULT now(),
  modifier text NOT NULL
);

CREATE TABLE sessions (
  user_key text NOT NULL,
  session text NOT NULL,
  expires timestamptz NOT NULL,
  stream_until timestamptz,
  PRIMARY KEY (user_key, session)
);
CREATE INDEX sessions_expires ON sessions (expires);
`,
};
