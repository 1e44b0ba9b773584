import { randomUUID } from 'node:crypto';
import type { Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import type { Action } from '../../config/schema.js';
import { AppError } from '../../errors/app-error.js';
import { assertValidText, DISPLAY_NAME_MAX } from '../../errors/input-errors.js';
import type { ListQuery } from '../../query/tree.js';
import type { Database, Sql } from '../../storage/driver/database.js';
import type { TaskService } from '../tasks/task-service.js';
import type { DefaultPanel, DefaultPanels } from './default-panels.js';
import type { PanelEvents } from './panel-events.js';
import { presentPanel } from './present.js';
import { GENERATED_FIELDS, type PanelBody, wantsEvent } from './schema.js';
import * as store from './store/panel-store.js';
import type { PanelRow } from './store/panel-store.js';

export interface PanelServiceOptions {
  db: Database;
  policy: Policy;
  /** Who may see which task (`taskId` must name one the caller may read). */
  tasks: Pick<TaskService, 'get'>;
  defaults: DefaultPanels;
  events: PanelEvents;
}

/** A user panel, or a default panel addressed under `/panels/{pid}` (read-only). */
export type AnyPanel = { kind: 'user'; row: PanelRow } | { kind: 'default'; panel: DefaultPanel };

const panelNotFound = (pid: string) => new AppError('PANEL_NOT_FOUND', 'no such panel', { pid: pid.slice(0, 80) });
const readOnly = (pid: string) => new AppError('PANEL_READONLY', `"${pid}" is a default panel: default panels cannot be changed or deleted`, { pid });

/**
 * A change's body comes as a function, read after the rights check: a
 * caller without the right is refused (403) whatever it sent.
 *
 * UI panels (spec: Panels; DESIGN.md section 6): the read-only defaults of
 * the configuration (`/v1/ui`) and the per-user panels (`/v1/panels`) in the
 * `panels` area. A user panel is the caller's own when they created or own
 * it; another user's panel is reported absent (404) unless a role gives the
 * `all` scope. Names are unique per holder (owner, else creator). No HTTP;
 * all SQL is in `store/panel-store.ts`.
 */
export class PanelService {
  constructor(private readonly o: PanelServiceOptions) {}

  /** GET /ui: the default panels shown to the caller (403 without the panels read right). */
  defaults(p: Principal): DefaultPanel[] {
    this.o.policy.require(p, 'panels', 'read');
    return this.o.defaults.shownTo(p);
  }

  /** GET /ui/{pid}. */
  defaultPanel(p: Principal, pid: string): DefaultPanel {
    this.o.policy.require(p, 'panels', 'read');
    const d = this.o.defaults.get(p, pid);
    if (!d) throw panelNotFound(pid);
    return d;
  }

  /** Any change of a default panel: 403 `PANEL_READONLY` (404 for an id that names none the caller is shown). */
  refuseDefaultChange(p: Principal, pid?: string): never {
    this.o.policy.require(p, 'panels', 'read');
    if (pid !== undefined && !this.o.defaults.get(p, pid)) throw panelNotFound(pid);
    throw new AppError('PANEL_READONLY', 'the default panels cannot be changed or deleted; keep your own under /v1/panels');
  }

  /** GET /panels: the caller's own panels (404 `NO_PANELS` when none match). */
  async list(p: Principal, q: ListQuery): Promise<PanelRow[]> {
    this.o.policy.require(p, 'panels', 'read');
    const rows = await store.listPanels(this.o.db, p.identities, q);
    if (rows.length === 0) throw new AppError('NO_PANELS', 'no panels match');
    return rows;
  }

  /**
   * POST /panels: a new panel held by `owner` (the `x-owner` header, checked
   * by `Policy.ownerFor`), else the caller. One transaction: the holder's
   * panel writes serialized, the task checked, the row inserted and, with
   * `createpanel`, the `panel.create` event raised for the holder.
   */
  async create(p: Principal, input: () => PanelBody, requestedOwner: string | undefined): Promise<PanelRow> {
    this.o.policy.require(p, 'panels', 'write');
    const owner = this.o.policy.ownerFor(p, 'panels', requestedOwner);
    const body = input();
    const name = checkedName(body.name);
    const taskId = await this.checkTask(p, body);
    const holder = owner ?? p.user;
    return this.o.db.transaction(async (tx) => {
      await store.lockHolder(tx, holder);
      const row = await store.insertPanel(tx, { pid: randomUUID(), name, config: configOf(body, taskId), taskId, creator: p.user, owner });
      if (wantsEvent(body)) await this.o.events.panelCreated(tx, { type: 'panel.create', user: holder, panel: presentPanel(row) });
      return row;
    });
  }

  /** GET /panels/{pid}: a user panel, or a default panel's configuration under its id. */
  async get(p: Principal, pid: string): Promise<AnyPanel> {
    this.o.policy.require(p, 'panels', 'read');
    const d = this.o.defaults.get(p, pid);
    if (d) return { kind: 'default', panel: d };
    return { kind: 'user', row: await this.visible(p, requireUuid(pid), 'read') };
  }

  /** PUT /panels/{pid}: the whole configuration replaced; `name` kept when absent, changed only to one the holder does not use (409). */
  async replace(p: Principal, pid: string, input: () => PanelBody): Promise<PanelRow> {
    this.o.policy.require(p, 'panels', 'write');
    if (this.o.defaults.has(pid)) throw readOnly(pid);
    const id = requireUuid(pid);
    const body = input();
    const name = checkedName(body.name);
    const taskId = await this.checkTask(p, body);
    const current = await this.visible(p, id, 'write');
    return this.o.db.transaction(async (tx) => {
      await store.lockHolder(tx, current.owner ?? current.creator);
      const row = await this.visible(p, id, 'write', tx, true);
      const next = await store.replacePanel(tx, id, { name: name ?? row.name, config: configOf(body, taskId), taskId });
      if (!next) throw panelNotFound(pid);
      return next;
    });
  }

  /** DELETE /panels/{pid}: the deleted panel. */
  async remove(p: Principal, pid: string): Promise<PanelRow> {
    this.o.policy.require(p, 'panels', 'delete');
    if (this.o.defaults.has(pid)) throw readOnly(pid);
    const id = requireUuid(pid);
    return this.o.db.transaction(async (tx) => {
      await this.visible(p, id, 'delete', tx, true);
      const row = await store.deletePanel(tx, id);
      if (!row) throw panelNotFound(pid);
      return row;
    });
  }

  /** 404 for a panel that is missing or another user's (unless the scope is `all`); 403 without the right. */
  private async visible(p: Principal, pid: string, action: Action, sql: Sql = this.o.db, lock = false): Promise<PanelRow> {
    const row = await store.getPanel(sql, pid, { lock });
    if (!row || !this.o.policy.may(p, 'panels', 'read', row)) throw panelNotFound(pid);
    this.o.policy.require(p, 'panels', action, row);
    return row;
  }

  /**
   * `taskId` must name a task the caller may see (else 409
   * `PANEL_TASK_UNKNOWN`: nothing tells a missing task from another user's),
   * and `serviceId`, when given, must be that task's service (409
   * `PANEL_SERVICE_MISMATCH`). The task's id, lower-case, or null.
   */
  private async checkTask(p: Principal, body: PanelBody): Promise<string | null> {
    if (body.taskId === undefined) return null;
    const tid = body.taskId.toLowerCase();
    let sid: string;
    try {
      sid = (await this.o.tasks.get(p, undefined, tid)).sid;
    } catch (err) {
      if (err instanceof AppError && err.code === 'TASK_NOT_FOUND') {
        throw new AppError('PANEL_TASK_UNKNOWN', 'taskId names no task you may see', { taskId: tid });
      }
      throw err;
    }
    if (body.serviceId !== undefined && body.serviceId !== sid) {
      throw new AppError('PANEL_SERVICE_MISMATCH', `task ${tid} belongs to service "${sid}", not "${body.serviceId}"`, { taskId: tid, serviceId: body.serviceId });
    }
    return tid;
  }
}

/** The name given (checked: 400 `INVALID_NAME`), or undefined for a generated one. */
function checkedName(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  assertValidText(name, 'the panel name', DISPLAY_NAME_MAX);
  return name;
}

/** The configuration kept: the body less `name` and the server's own fields, `taskId` as stored. */
function configOf(body: PanelBody, taskId: string | null): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    if (k === 'name' || (GENERATED_FIELDS as readonly string[]).includes(k)) continue;
    config[k] = v;
  }
  if (taskId !== null) config.taskId = taskId;
  return config;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A user panel's id is a UUID: anything else (that is no default panel) is absent. */
function requireUuid(pid: string): string {
  if (!UUID.test(pid)) throw panelNotFound(pid);
  return pid.toLowerCase();
}
