import type { Principal } from '../../../auth/principal.js';
import { SHARED } from '../../../auth/policy.js';
import { printBackendTimeouts, type PrintBackendContext } from '../../../connectors/print-backends/print-backend.js';
import { checkPrintConnection, printBackendFor } from '../../../connectors/print-backends/registry.js';
import { AppError } from '../../../errors/app-error.js';
import type { ODataQuery } from '../../../query/odata.js';
import type { Services } from '../../../runtime/services.js';
import type { Sql } from '../../../storage/driver/database.js';
import { flowExists } from '../flows/flow-store.js';
import { printerLog, type PrintLogRow } from '../jobs/store/job-reads.js';
import { moveWaitingJobs, printLog } from '../jobs/store/job-store.js';
import { PRINTER_OPERATION_RULES, printerOperationAllowed, printerState, redirectRefusal, type PrinterOperation } from './printer-states.js';
import {
  deletePrinter, getPrinter, getPrinterWithRuntime, insertPrinter, listPrinters, lockRedirects, printerUsers, redirectMap,
  replacePrinter, resolveRedirect, updatePrinter, type PrinterConfig, type PrinterWithRuntime,
} from './printer-store.js';

const notFound = (name: string) => new AppError('PRINTER_NOT_FOUND', `no printer named "${name.slice(0, 200)}"`, { printer: name.slice(0, 200) });

/**
 * Printers' domain operations (DESIGN.md section 7). Printers are shared
 * objects: reading needs `read` on printers, pause/resume/redirect/message/
 * device check/test job `act`, configuration changes `write`, deletion `delete`.
 */
export class PrinterService {
  constructor(private readonly s: Pick<Services, 'config' | 'db' | 'log' | 'outbox' | 'policy' | 'printConfinement'>) {}

  /** What a backend is built with: the log, the network timeouts dispatch uses (`printDispatch`), the confinement rule. */
  private get backend(): PrintBackendContext {
    return { log: this.s.log, timeouts: printBackendTimeouts(this.s.config.printDispatch), confinement: this.s.printConfinement };
  }

  list(p: Principal, q: ODataQuery) {
    this.s.policy.require(p, 'printers', 'read');
    return listPrinters(this.s.db, q);
  }

  async get(p: Principal, name: string, sql: Sql = this.s.db): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'read', SHARED);
    const row = await getPrinterWithRuntime(sql, name);
    if (!row) throw notFound(name);
    return row;
  }

  /**
   * Validates the connection with the backend registry (400; the
   * confinement rule: 400 `CONNECTION_FORBIDDEN`), outside any transaction
   * since it may resolve a name.
   */
  private async checkConnection(c: PrinterConfig): Promise<void> {
    await checkPrintConnection(c.connection, this.backend);
  }

  /** Validates the flow (400) before anything is stored. */
  private async checkFlow(sql: Sql, c: PrinterConfig): Promise<void> {
    if (c.flow && !(await flowExists(sql, c.flow))) throw new AppError('INVALID_FLOW', `no flow named "${c.flow}"`, { flow: c.flow });
  }

  async create(p: Principal, name: string, c: PrinterConfig): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'write', SHARED);
    await this.checkConnection(c);
    return this.s.db.transaction(async (tx) => {
      await this.checkFlow(tx, c);
      await insertPrinter(tx, name, c, p.user);
      await printLog(tx, { printer: name, text: `created by ${p.user} (${c.connection})` });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  async replace(p: Principal, name: string, c: PrinterConfig): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'write', SHARED);
    await this.checkConnection(c);
    return this.s.db.transaction(async (tx) => {
      if (!(await getPrinter(tx, name, 'update'))) throw notFound(name);
      await this.checkFlow(tx, c);
      await replacePrinter(tx, name, c);
      await printLog(tx, { printer: name, text: `configuration replaced by ${p.user} (${c.connection}${c.enabled ? '' : ', disabled'})` });
      // an enabled printer may have work that waited while it was disabled
      await this.s.outbox.add(tx, 'print.dispatch', { printer: name });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  /** 409 PRINTER_IN_USE while jobs on it are not finished or printers redirect to it. */
  async remove(p: Principal, name: string): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'delete', SHARED);
    return this.s.db.transaction(async (tx) => {
      const row = await getPrinterWithRuntime(tx, name);
      if (!row || !(await getPrinter(tx, name, 'update'))) throw notFound(name);
      const users = await printerUsers(tx, name);
      if (users.jobs > 0 || users.redirectedFrom.length > 0) {
        throw new AppError('PRINTER_IN_USE', users.jobs > 0
          ? `"${name}" still has ${users.jobs} unfinished job(s); cancel or move them first`
          : `printers redirect to "${name}": ${users.redirectedFrom.join(', ')}`, { jobs: users.jobs, redirectedFrom: users.redirectedFrom });
      }
      await deletePrinter(tx, name);
      return row;
    });
  }

  /** pause / resume by PRINTER_OPERATION_RULES (412 otherwise); resume wakes its dispatch. */
  async operate(p: Principal, name: string, op: PrinterOperation): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'act', SHARED);
    return this.s.db.transaction(async (tx) => {
      const row = await getPrinter(tx, name, 'update');
      if (!row) throw notFound(name);
      const from = printerState(row);
      if (!printerOperationAllowed(op, from)) {
        throw new AppError('INVALID_STATE', `${op} is not possible while the printer is ${from}`, { printer: name, state: from, operation: op, allowedFrom: [...PRINTER_OPERATION_RULES[op].from] });
      }
      const to = PRINTER_OPERATION_RULES[op].to;
      await updatePrinter(tx, name, { paused: to === 'paused' });
      await printLog(tx, { printer: name, text: `${op} by ${p.user}: ${from} -> ${to}` });
      if (to === 'active') await this.s.outbox.add(tx, 'print.dispatch', { printer: name });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  /**
   * Sets (or with null removes) the redirect. 412 INVALID_REDIRECT to itself,
   * to an unknown printer, or into a loop; redirect changes are serialized so
   * two concurrent ones cannot close a loop together. Waiting jobs move along.
   */
  async redirect(p: Principal, name: string, target: string | null): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'act', SHARED);
    return this.s.db.transaction(async (tx) => {
      await lockRedirects(tx);
      const row = await getPrinter(tx, name, 'update');
      if (!row) throw notFound(name);
      if (target === null) {
        await updatePrinter(tx, name, { redirect: null });
        await printLog(tx, { printer: name, text: row.redirect ? `redirect to "${row.redirect}" removed by ${p.user}` : `no redirect (unchanged)` });
        return (await getPrinterWithRuntime(tx, name))!;
      }
      const exists = target === name || (await getPrinter(tx, target, 'share')) !== undefined;
      const refusal = redirectRefusal(name, target, exists, await redirectMap(tx));
      if (refusal) throw new AppError('INVALID_REDIRECT', refusal, { printer: name, target });
      await updatePrinter(tx, name, { redirect: target });
      const end = await resolveRedirect(tx, target);
      const moved = await moveWaitingJobs(tx, name, end, p.user);
      await printLog(tx, { printer: name, text: `redirected to "${target}" by ${p.user}${moved ? `; ${moved} waiting job(s) moved to "${end}"` : ''}` });
      if (moved) await this.s.outbox.add(tx, 'print.dispatch', { printer: end });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  async setMessage(p: Principal, name: string, text: string | null): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'act', SHARED);
    return this.s.db.transaction(async (tx) => {
      if (!(await getPrinter(tx, name, 'update'))) throw notFound(name);
      const message = text === null ? null : { text, user: p.user, date: new Date().toISOString() };
      await updatePrinter(tx, name, { message });
      await printLog(tx, { printer: name, text: text === null ? `message removed by ${p.user}` : `message set by ${p.user}: ${text}` });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  /** Probes the device through its print backend (never throws for the device's reasons) and stores the result. */
  async checkPhysical(p: Principal, name: string): Promise<PrinterWithRuntime> {
    this.s.policy.require(p, 'printers', 'act', SHARED);
    const row = await getPrinter(this.s.db, name);
    if (!row) throw notFound(name);
    const backend = printBackendFor(row.connection, this.backend);
    const state = await backend.checkPhysical(AbortSignal.timeout(15_000));
    const physical = { reachable: state.reachable, message: state.message, checked: state.checked.toISOString(), connection: backend.connection, ...(state.details ? { details: state.details } : {}) };
    return this.s.db.transaction(async (tx) => {
      if (!(await getPrinter(tx, name, 'update'))) throw notFound(name);
      await updatePrinter(tx, name, { physical });
      await printLog(tx, { printer: name, level: state.reachable ? 'info' : 'warning', text: `device check by ${p.user}: ${state.reachable ? 'reachable' : 'not reachable'}: ${state.message}` });
      return (await getPrinterWithRuntime(tx, name))!;
    });
  }

  /**
   * The printer's log as the caller may see it: its own lines (operations,
   * device checks, device errors: they name no job) to every printer reader,
   * a job's lines only to those who may read the job (a plain user: their
   * own jobs'), as `GET /v3/jobs/{id}/logs` would show them.
   */
  async log(p: Principal, name: string): Promise<PrintLogRow[]> {
    await this.get(p, name);
    const jobsOf = this.s.policy.ownedBy(p, 'jobs', ['read']);
    return printerLog(this.s.db, name, 1000, jobsOf === false ? [] : jobsOf);
  }
}
