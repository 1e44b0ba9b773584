import { AppError } from '../../errors/app-error.js';
import type { ConnectorPorts, PrintPort } from '../ports.js';
import type { TaskAction, TaskItem, TaskJobs, TasksFacet } from '../facets/tasks.js';
import { printJobKey } from './job-report.js';

/** The job settings an item's merged metadata may carry (the print API's ranges). */
export interface ItemPrintSettings {
  printer: string;
  copies?: number;
  priority?: number;
  flow?: string;
  name?: string;
}

const wholeIn = (v: unknown, min: number, max: number): number | undefined => {
  const n = typeof v === 'string' && /^\d{1,9}$/.test(v.trim()) ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= min && n <= max ? n : undefined;
};
const text = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v.trim() !== '' && v.length <= max ? v : undefined);
const has = (m: Readonly<Record<string, unknown>>, k: string) => Object.hasOwn(m, k) && m[k] !== undefined && m[k] !== null && m[k] !== '';

/**
 * The settings from the item's merged metadata: `printer` (else the
 * service's default), `copies` (1-9999), `priority` (0-100), `flow`,
 * `jobName`. A value present but unusable is a refusal naming the key,
 * never silently dropped.
 */
export function itemSettings(meta: Readonly<Record<string, unknown>>, defaultPrinter: string | undefined): ItemPrintSettings | { refused: string } {
  const printer = has(meta, 'printer') ? text(meta.printer, 200) : defaultPrinter;
  if (!printer) return { refused: has(meta, 'printer') ? 'metadata "printer" must be a printer name' : 'no printer: set the item\'s metadata "printer" (the service has no defaultPrinter)' };
  const out: ItemPrintSettings = { printer };
  if (has(meta, 'copies')) {
    const copies = wholeIn(meta.copies, 1, 9999);
    if (copies === undefined) return { refused: 'metadata "copies" must be a whole number from 1 to 9999' };
    out.copies = copies;
  }
  if (has(meta, 'priority')) {
    const priority = wholeIn(meta.priority, 0, 100);
    if (priority === undefined) return { refused: 'metadata "priority" must be a whole number from 0 to 100' };
    out.priority = priority;
  }
  if (has(meta, 'flow')) {
    const flow = text(meta.flow, 200);
    if (flow === undefined) return { refused: 'metadata "flow" must be a flow name' };
    out.flow = flow;
  }
  if (has(meta, 'jobName')) {
    const name = text(meta.jobName, 500);
    if (name === undefined) return { refused: 'metadata "jobName" must be a name of at most 500 characters' };
    out.name = name;
  }
  return out;
}

/**
 * The print connector's `tasks` facet. `runItem` makes the item's document a
 * print job and hands it off: it reports `submitting` before the job exists,
 * then every state of the job reaches the item from the job's own changes
 * (`print.task-report`, in order), so nothing it reports can overtake them.
 * Idempotent through the port (one job per item and run). The hooks act on
 * the task's jobs: pause holds the waiting ones, resume releases them, abort
 * cancels those not yet on their way to the printer.
 */
export function printTasks(print: PrintPort, o: { defaultPrinter?: string; actions: readonly TaskAction[] }, sid: string): TasksFacet {
  const by = `print:${sid}`;
  const each = async (task: TaskJobs, ports: ConnectorPorts, act: (id: string) => Promise<unknown>) => {
    for (const job of await print.jobsOfTask(task.tid)) {
      // one job's failure does not stop the others; the hook's caller logs
      await act(job.id).catch((err: unknown) => ports.log.warn({ err, job: job.id }, 'print job operation failed'));
    }
  };
  return {
    actions: o.actions,
    async runItem(item: TaskItem, ctx) {
      const jobId = printJobKey(item.tid, item.id);
      const settings = itemSettings(item.metadata, o.defaultPrinter);
      if ('refused' in settings) {
        await ctx.report({ jobId, state: 'failed', outcome: 'failed', message: settings.refused });
        return;
      }
      if (ctx.signal.aborted) throw ctx.signal.reason;
      // before the job exists: no report of the job's own can come earlier and be overwritten by this one
      if (!(await ctx.report({ jobId, state: 'submitting', outcome: 'running', message: `to "${settings.printer}"` }))) return;
      try {
        await print.submitItem({ sid: item.sid, tid: item.tid, item: item.id, href: item.href, ...settings });
      } catch (err) {
        // a refusal (the document, the printer, the flow) fails the item naming why; anything else is retried with the job
        if (err instanceof AppError && err.status < 500) {
          await ctx.report({ jobId, state: 'failed', outcome: 'failed', message: err.message });
          return;
        }
        throw err;
      }
      // handed off: the job's states come through print.task-report
    },
    // each job only while the task is still in the status the hook is for (a later action's hook does the rest)
    pause: (task, ports) => each(task, ports, (id) => print.hold(id, by, { tid: task.tid, status: 'paused' })),
    resume: (task, ports) => each(task, ports, (id) => print.release(id, by, { tid: task.tid, status: 'processing' })),
    abort: (task, ports) => each(task, ports, (id) => print.cancel(id, by, { tid: task.tid, status: 'aborted' })),
  };
}
