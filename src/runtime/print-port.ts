import { systemPrincipal } from '../auth/principal.js';
import type { PrintJobChange, PrintJobView, PrintPort, TaskGuard } from '../connectors/ports.js';
import { AppError } from '../errors/app-error.js';
import { docRef } from '../areas/lists/store/doc-href.js';
import { runtimeStatus } from '../areas/print/printers/printer-states.js';
import { isFinalJobState, operationAllowed, type JobOperation } from '../areas/print/jobs/job-states.js';
import type { PrintJobRow } from '../areas/print/jobs/store/job-row.js';
import { adoptTaskJob } from '../areas/print/jobs/store/job-store.js';
import { latestItemJob, latestTaskJobs, nextReportNumber } from '../areas/print/jobs/store/task-jobs.js';
import { taskRunner } from '../areas/tasks/store/task-queries.js';
import { lockStatusIs } from '../areas/tasks/store/task-store.js';
import type { Sql } from '../storage/driver/database.js';
import { runAs } from '../areas/tasks/task-principal.js';
import type { Services } from './services.js';

type PortServices = Pick<Services, 'db' | 'outbox' | 'repository' | 'printJobs' | 'printers'>;

/** A job as the port shows it. */
const view = (j: PrintJobRow): PrintJobView => ({
  id: String(j.id), status: j.status, printer: j.printer, fileName: j.file_name, message: j.message, href: `/v3/jobs/${j.id}`,
});

/** The run a task's job was printed for (migration 021: `task.run`). */
const runOf = (j: PrintJobRow): number => Number(j.task?.run);

/** A job of an earlier run that ended in these states is printed again by a new run; any other is taken over. */
const RETRIED = new Set(['error', 'canceled']);

/**
 * The `print` port over the runtime's services (`ConnectorType.ports`). The
 * services are built after the connectors (they need the registry), so the
 * port reaches them through `services()`, which answers once they exist;
 * connectors use it only from `prepare`, `runItem`, hooks and functions on.
 *
 * Rights: a task item's document is opened through the repository service
 * with the task's principal (`runAs`, the rule `ItemRunner` checked before
 * calling the connector), and the job is submitted with the same principal
 * (`jobs` `write`), so a connector cannot print what the task's user may not
 * read. Job operations act as the system user `print:<sid>`.
 */
export function printPort(services: () => PortServices | undefined): PrintPort {
  const s = (): PortServices => {
    const built = services();
    if (!built) throw new Error('the print port is used before the runtime is built');
    return built;
  };
  const by = (who: string) => systemPrincipal(who);

  /** Asks for the job's present state to be reported to its item again (a `print.task-report` of its own). */
  const mirror = async (j: PrintJobRow): Promise<void> => {
    const { db, outbox } = s();
    const t = j.task;
    if (!t?.item || t.run === undefined) return; // not a task item's job
    await outbox.add(db, 'print.task-report', { job: String(j.id), n: await nextReportNumber(db), sid: t.sid, tid: t.tid, item: t.item, run: Number(t.run), gone: false });
  };

  /** One job operation as the system user; what it did. */
  const operate = async (id: string, op: JobOperation, who: string, ifInDelivery: (j: PrintJobRow) => boolean, guard?: TaskGuard): Promise<PrintJobChange> => {
    const svc = s();
    let job: PrintJobRow;
    try {
      job = await svc.printJobs.get(by(who), id);
    } catch (err) {
      if (err instanceof AppError && err.code === 'JOB_NOT_FOUND') return 'gone';
      throw err;
    }
    if (isFinalJobState(job.status)) return 'final';
    if (ifInDelivery(job)) {
      // on its way to the printer: it cannot be taken back; the item says so
      await mirror(job);
      return 'in-delivery';
    }
    if (!operationAllowed(op, job.status)) return 'unchanged';
    try {
      // under the task row's lock: the task's status cannot change before this commits (see lockStatusIs)
      const precondition = guard && ((tx: Sql) => lockStatusIs(tx, guard.tid, guard.status));
      return (await svc.printJobs.operateIf(by(who), id, op, {}, precondition)) ? 'changed' : 'unchanged';
    } catch (err) {
      // the job moved meanwhile (the engine took it, it ended): as the state it reached says
      if (err instanceof AppError && (err.code === 'INVALID_STATE' || err.code === 'JOB_NOT_FOUND')) return 'unchanged';
      throw err;
    }
  };
  const inDelivery = (j: PrintJobRow) => j.status === 'processing' || j.status === 'preprocessing';

  return {
    async submitItem(sub) {
      const svc = s();
      const task = await taskRunner(svc.db, sub.tid);
      if (!task || task.sid !== sub.sid) throw new AppError('TASK_NOT_FOUND', `no task ${sub.tid} in service "${sub.sid}"`, { sid: sub.sid, tid: sub.tid });
      // idempotent per item and run: the item's newest job, if any, is this run's or taken over by it
      const latest = await latestItemJob(svc.db, sub.tid, sub.item);
      if (latest) {
        if (runOf(latest) === task.run) {
          // submitted by this run already (a retry after a crash or a duplicate delivery): reported again,
          // after the report the connector made before submitting
          await mirror(latest);
          return view(latest);
        }
        // a job of an earlier run that is not final (held by a pause), or that printed: the new run's, not printed again
        if (!RETRIED.has(latest.status)) return view((await adoptTaskJob(svc.db, latest.id, task.run)) ?? latest);
      }
      const doc = docRef(sub.href);
      if (!doc) throw new AppError('INVALID_HREF', `the print connector prints repository documents, not ${sub.href.slice(0, 200)}`, { href: sub.href.slice(0, 200) });
      // with the task's rights: the rule ItemRunner checked, applied again by the repository service itself
      const principal = runAs(task);
      const { entry, stream } = await svc.repository.openContent(principal, doc.sid, doc.uuid).catch((err: unknown) => {
        // the item's message names the document and whom the run acts for
        if (err instanceof AppError && ['NOT_OWNER', 'FORBIDDEN', 'ENTRY_NOT_FOUND'].includes(err.code)) {
          throw new AppError(err.code, `document ${sub.href.slice(0, 200)} cannot be printed for ${principal.user}: ${err.message}`, err.details);
        }
        throw err;
      });
      const owner = task.owner !== null && principal.identities.includes(task.owner) ? task.owner : undefined;
      try {
        const row = await svc.printJobs.submit(principal, {
          printer: sub.printer,
          source: stream,
          mimeType: entry.mime_type ?? 'application/octet-stream',
          name: sub.name ?? entry.name,
          fileName: entry.name,
          ...(sub.copies !== undefined ? { copies: sub.copies } : {}),
          ...(sub.priority !== undefined ? { priority: sub.priority } : {}),
          ...(sub.flow !== undefined ? { flow: sub.flow } : {}),
          checkin: { type: 'task', source: `/v1/services/${sub.sid}/tasks/${sub.tid}` },
          task: { sid: sub.sid, tid: sub.tid, item: sub.item, run: task.run },
        }, owner);
        return view(row);
      } catch (err) {
        stream.destroy();
        // another delivery of the same item and run submitted first (the unique key of migration 021): that job is this one
        const again = await latestItemJob(svc.db, sub.tid, sub.item);
        if (again && runOf(again) === task.run) return view(again);
        throw err;
      }
    },

    async jobsOfTask(tid) {
      return (await latestTaskJobs(s().db, tid)).map(view);
    },

    hold: (id, who, whileTask) => operate(id, 'pause', who, inDelivery, whileTask),
    release: (id, who, whileTask) => operate(id, 'resume', who, () => false, whileTask),
    cancel: (id, who, whileTask) => operate(id, 'cancel', who, inDelivery, whileTask),

    async printer(name) {
      try {
        const p = await s().printers.get(by('print'), name);
        return { name: p.name, state: runtimeStatus(p, p.current_job !== null), description: p.description };
      } catch (err) {
        if (err instanceof AppError && err.code === 'PRINTER_NOT_FOUND') return undefined;
        throw err;
      }
    },

    async ensurePrinter(p, who) {
      try {
        await s().printers.create(by(who), p.name, {
          connection: p.connection, description: p.description ?? null, location: p.location ?? null, enabled: true, flow: null,
        });
        return true;
      } catch (err) {
        // there already (made by an earlier start, another process, or an operator, whose changes stay)
        if (err instanceof AppError && err.code === 'PRINTER_EXISTS') return false;
        throw err;
      }
    },
  };
}
