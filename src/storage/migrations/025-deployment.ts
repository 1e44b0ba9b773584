import type { Migration } from './index.js';

/**
 * The deployment's identity (issue 24, item 2): one row holding an id made
 * once per database. The same id is written under the Redis prefix the
 * deployment uses (`src/queue/prefix-binding.ts`), so a second deployment
 * (another database) configured with the same prefix on the same Redis is
 * refused at start instead of taking the first one's jobs.
 *
 *   one   always true: the primary key that allows a single row
 *   id    the deployment id, written by `deployment-store.ts` on first start
 */
export const m025Deployment: Migration = {
  id: 25,
  name: 'deployment',
  sql: `
CREATE TABLE deployment (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  id uuid NOT NULL,
  created timestamptz NOT NULL DEFAULT now()
);
`,
};
