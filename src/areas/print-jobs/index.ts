import type { Area } from '../area.js';
import { deleteExpiredJobs } from './print-job-store.js';
import { printJobRoutes } from './routes.js';

/**
 * Print jobs (`/v3/jobs/...`). Their dispatch (the `print.dispatch` handler,
 * pending work for the reconciler) belongs to the print engine (`src/print/`).
 */
export const printJobsArea: Area = {
  name: 'print-jobs',
  v3: printJobRoutes,
  async housekeeping(s) {
    return { expiredPrintJobs: await deleteExpiredJobs(s.db, s.config.print.retention) };
  },
};
