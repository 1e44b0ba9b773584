import type { Migration } from './index.js';

/**
 * Leases that keep a single-instance connector running in one worker process
 * at a time, and the per-service state connectors keep (`ConnectorStateStore`).
 * Expiry is database time (`now()`), so the clocks of the worker hosts never
 * matter.
 */
export const m005ConnectorLeases: Migration = {
  id: 5,
  name: 'connector-leases',
  sql: `
CREATE TABLE connector_leases (
  name text PRIMARY KEY,
  -- host:pid:random of the process running it
  holder text NOT NULL,
  acquired timestamptz NOT NULL DEFAULT now(),
  renewed timestamptz NOT NULL DEFAULT now(),
  expires timestamptz NOT NULL
);

CREATE TABLE connector_state (
  sid text NOT NULL,
  key text NOT NULL,
  value jsonb NOT NULL,
  updated timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (sid, key)
);
`,
};
