import { printItemReport } from '../../../connectors/print/job-report.js';
import type { PendingJob } from '../../area.js';
import type { JobData, JobHandlers } from '../../../queue/jobs.js';
import type { Services } from '../../../runtime/services.js';
import { reportForRun, settleAfter } from '../../tasks/actions/item-reporter.js';
import { lockJobReports, staleTaskItems, taskJob } from './store/task-jobs.js';

/**
 * The `print.task-report` handler: a job of a task changed (migration 021's
 * trigger asked for this in the changing statement), so its present state is
 * reported to the task item through the tasks area's reporter, under the
 * job's run (a job of an earlier run reports nothing to the new one's item).
 * The reports of one job take turns under its lock and read the job after
 * taking it, so the item never goes back to an older state; a report that
 * changes nothing is harmless, so any number of them may run.
 */
export async function reportTaskJob(s: Services, d: JobData<'print.task-report'>): Promise<void> {
  const outcome = await s.db.transaction(async (tx) => {
    await lockJobReports(tx, d.job);
    const row = await taskJob(tx, d.job);
    // deleted before it ended (the trigger's `gone`), or found gone now: the item fails naming the job
    if (!row && !d.gone) return undefined;
    if (row && (row.task?.tid !== d.tid || row.task_status === null)) return undefined;
    const run = row ? Number((row.task as { run?: unknown }).run) : d.run;
    const report = printItemReport(d.tid, d.item, d.job, row && {
      id: row.id, status: row.status, printer: row.printer, message: row.message, lastLog: row.last_log,
    }, row?.task_status ?? null);
    return reportForRun(tx, d.tid, run, report);
  });
  if (outcome?.settle) await settleAfter(s.db, d.tid);
}

export function taskReportHandlers(s: Services): JobHandlers {
  return { 'print.task-report': (data) => reportTaskJob(s, data) };
}

/**
 * The reconciler's source: items whose row does not show their job's state
 * (a report Redis lost after the relay handed it over). Each gets a report
 * of its own (`n` 0: one id per job, so a pass that finds it queued or
 * running adds nothing); one that changes nothing is harmless.
 */
export async function pendingTaskReports(s: Services, limit: number): Promise<PendingJob[]> {
  return (await staleTaskItems(s.db, limit)).map((r) => ({
    name: 'print.task-report' as const,
    data: { job: r.job, n: 0, sid: r.sid, tid: r.tid, item: r.item, run: Number(r.run), gone: false },
  }));
}
