import type { ItemReport } from '../facets/tasks.js';

/**
 * How a print job's state shows on its task item (`cstats`): the pure rule
 * the `print.task-report` handler applies whenever a job of a task changes
 * (src/areas/print/jobs/task-reports.ts). `state` is the job's state in the
 * print API's words; the outcome is what the task's status derives from.
 */

/** The item's `cstats` key: one per item, the same across runs and jobs (a new run may print a new job). */
export const printJobKey = (tid: string, item: string): string => `${tid}.${item}`;

/** What the rule needs of the job; undefined when it was deleted before it ended. */
export interface JobFacts {
  id: string;
  status: string;
  printer: string;
  message: string | null;
  /** The job's last log line (why it ended in error or was canceled). */
  lastLog: string | null;
}

/** The item's report for the job in its present state, with the task's status (`aborted`: the row is closed; the report is a note). */
export function printItemReport(tid: string, item: string, jobId: string, job: JobFacts | undefined, taskStatus: string | null): ItemReport {
  const base = { jobId: printJobKey(tid, item), item, href: `/v3/jobs/${jobId}` };
  if (!job) return { ...base, state: 'deleted', outcome: 'failed', message: `print job ${jobId} was deleted before it was printed` };
  const why = job.message ?? job.lastLog ?? undefined;
  const on = `on "${job.printer}"`;
  if (taskStatus === 'aborted') {
    // the task's abort closed the item: what became of its job is a note, the outcome stays aborted
    const note = job.status === 'canceled' ? 'canceled: the task was aborted'
      : job.status === 'processed' ? `printed ${on}: it was being delivered when the task was aborted and could not be canceled`
        : job.status === 'processing' ? `being delivered ${on} when the task was aborted: it cannot be canceled`
          : job.status === 'error' ? `error: ${why ?? 'see the job log'}` : `${job.status} after the task was aborted`;
    return { ...base, state: job.status, outcome: 'aborted', message: note };
  }
  switch (job.status) {
    case 'processed':
      return { ...base, state: job.status, outcome: 'done', message: `printed ${on}` };
    case 'error':
      return { ...base, state: job.status, outcome: 'failed', message: `print job ${jobId} failed ${on}: ${why ?? 'see the job log'}` };
    case 'canceled':
      return { ...base, state: job.status, outcome: 'failed', message: `print job ${jobId} was canceled: ${job.lastLog ?? 'canceled'}` };
    case 'paused':
      return { ...base, state: job.status, outcome: 'paused', message: `held ${on}` };
    default:
      if (taskStatus === 'paused' && (job.status === 'processing' || job.status === 'preprocessing')) {
        // the pause could not hold it: it is on its way to the printer
        return { ...base, state: job.status, outcome: 'paused', message: `being delivered ${on} when the task was paused: it cannot be held` };
      }
      return { ...base, state: job.status, outcome: 'running', message: `${job.status} ${on}` };
  }
}
