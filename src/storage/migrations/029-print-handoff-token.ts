import type { Migration } from './index.js';

/**
 * Which run's opening handed a print job off:
 *
 *   handoff_token   a random id a run's opening (open-run.sql, or
 *                   claim-next.sql in the transaction it falls back to)
 *                   writes with its hand-off (NULL for every other
 *                   hand-off). When the
 *                   connection breaks before its answer arrives, the run
 *                   cannot tell whether the hand-off committed; nothing was
 *                   sent. The next run of that printer in the same process
 *                   finds the job in flight under that token and delivers it,
 *                   where any other finder ends it "delivery uncertain".
 */
export const m029PrintHandoffToken: Migration = {
  id: 29,
  name: 'print-handoff-token',
  sql: `
ALTER TABLE print_jobs ADD COLUMN handoff_token uuid;
`,
};
