import type { Migration } from './index.js';

/**
 * How often the reconciler re-created the job of a pending row (failed past
 * its attempts, stalled, lost), keyed by the derived job id. Kept in the
 * database so the bound holds across Redis wipes and worker restarts: past
 * `queues.maxRecreations` the row is failed with a reason instead of looping.
 */
export const m004JobRecreations: Migration = {
  id: 4,
  name: 'job-recreations',
  sql: `
    CREATE TABLE job_recreations (
      job_id text PRIMARY KEY,
      count integer NOT NULL,
      last_reason text NOT NULL,
      -- which run of the job was replaced last: reconcilers of several processes count it once
      last_instance text NOT NULL,
      updated timestamptz NOT NULL DEFAULT now()
    );
  `,
};
