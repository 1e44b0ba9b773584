import { abandonDispatch, dispatchFailing, dispatchHandlers, pendingDispatch } from '../dispatch/index.js';
import type { Area } from '../../area.js';
import { deleteExpiredJobs } from './store/job-store.js';
import { printJobRoutes } from './routes.js';

/**
 * Print jobs (`/v3/jobs/...`). Their dispatch (the `print.dispatch` handler,
 * the reconciler's pending work, its abandon and failing steps) is the print engine's
 * (`src/areas/print/dispatch/`), wired here.
 */
export const printJobsArea: Area = {
  name: 'print-jobs',
  v3: printJobRoutes,
  jobs: dispatchHandlers,
  pending: pendingDispatch,
  abandon: abandonDispatch,
  failing: dispatchFailing,
  async housekeeping(s) {
    return { expiredPrintJobs: await deleteExpiredJobs(s.db, s.config.print.retention) };
  },
};
