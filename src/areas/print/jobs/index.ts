import { abandonDispatch, dispatchFailing, dispatchHandlers, pendingDispatch } from '../dispatch/index.js';
import type { Area } from '../../area.js';
import { deleteExpiredJobs } from './store/job-store.js';
import { printJobRoutes } from './routes.js';
import { pendingTaskReports, taskReportHandlers } from './task-reports.js';

/**
 * Print jobs (`/v3/jobs/...`). Their dispatch (the `print.dispatch` handler,
 * the reconciler's pending work, its abandon and failing steps) is the print engine's
 * (`src/areas/print/dispatch/`), wired here.
 */
export const printJobsArea: Area = {
  name: 'print-jobs',
  v3: printJobRoutes,
  // the engine's, and the reports of task jobs' states to their items (the `print` task connector)
  jobs: (s, stopped, stopping) => ({ ...dispatchHandlers(s, stopped, stopping), ...taskReportHandlers(s) }),
  // printers with dispatch work, and task items whose job's state report was lost
  pending: async (s, limit) => [...await pendingDispatch(s, limit), ...await pendingTaskReports(s, limit)],
  abandon: abandonDispatch,
  failing: dispatchFailing,
  async housekeeping(s) {
    return { expiredPrintJobs: await deleteExpiredJobs(s.db, s.config.print.retention) };
  },
};
