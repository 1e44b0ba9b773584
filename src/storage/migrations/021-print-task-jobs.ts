import type { Migration } from './index.js';

/**
 * Print jobs of the `print` task connector (issue 22, item 4). Such a job's
 * `task` is `{ sid, tid, item, run }`: the task item it prints and the run
 * that printed it (the connector's submission writes it; the API's own
 * submissions have no task).
 *
 *   print_jobs_task_item   at most one job per task item and run: a worker
 *                          killed between a submission and its report, or a
 *                          duplicate delivery of the item's job, finds the
 *                          job already there instead of printing twice.
 *
 *   print_job_task_report  every change of such a job's status or task
 *                          reference, and the delete of one not final, adds
 *                          a `print.task-report` outbox row in the changing
 *                          statement itself, whatever made the change (the
 *                          dispatch engine, the /v3 API, housekeeping), so
 *                          it reaches the task item even when the process
 *                          dies right after the commit. Its job id
 *                          `print.task-report.<job id>.<n>` is new per
 *                          change (`n` from print_task_report_seq), so a
 *                          change never merges into a report already
 *                          running; the handler reports the job's state as
 *                          it is then. The row is unclaimed, so the
 *                          outbox's statement trigger notifies the relays.
 *                          The outbox's writer is otherwise outbox-store.ts;
 *                          this trigger is the one other writer
 *                          (docs/architecture.md, "One writer per table").
 *
 * Frozen text: the final states are copied from job-states.ts.
 */
export const m021PrintTaskJobs: Migration = {
  id: 21,
  name: 'print-task-jobs',
  sql: `
CREATE UNIQUE INDEX print_jobs_task_item ON print_jobs ((task->>'tid'), (task->>'item'), (task->>'run'))
  WHERE task ? 'run';

CREATE SEQUENCE print_task_report_seq;

CREATE FUNCTION print_job_task_report() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  j print_jobs;
  n bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN j := OLD; ELSE j := NEW; END IF;
  n := nextval('print_task_report_seq');
  INSERT INTO outbox (name, job_id, data) VALUES ('print.task-report', 'print.task-report.' || j.id || '.' || n,
    jsonb_build_object('job', j.id::text, 'n', n, 'sid', j.task->>'sid', 'tid', j.task->>'tid', 'item', j.task->>'item',
      'run', (j.task->>'run')::int, 'gone', TG_OP = 'DELETE'))
  ON CONFLICT (job_id) DO NOTHING;
  RETURN NULL;
END $$;

CREATE TRIGGER print_job_task_report_change AFTER INSERT OR UPDATE OF status, task ON print_jobs
  FOR EACH ROW WHEN (NEW.task ? 'run') EXECUTE FUNCTION print_job_task_report();

CREATE TRIGGER print_job_task_report_delete AFTER DELETE ON print_jobs
  FOR EACH ROW WHEN (OLD.task ? 'run' AND OLD.status NOT IN ('processed', 'canceled', 'error')) EXECUTE FUNCTION print_job_task_report();
`,
};
