import { randomUUID } from 'node:crypto';
import type { Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import type { TasksFacet } from '../../connectors/connector.js';
import type { ConnectorRegistry } from '../../connectors/registry.js';
import { AppError } from '../../errors/app-error.js';
import { assertValidText } from '../../errors/input-errors.js';
import type { Database, Sql, Tx } from '../../storage/driver/database.js';
import type { ListQuery } from '../../query/tree.js';
import { mergeMetadata } from '../lists/store/merge-metadata.js';
import { metadataProblem } from '../repository/metadata-rules.js';
import * as store from './store/task-store.js';
import { countTasks, countTasksOf, pageTaskIds, tasksByIds, type TaskScope } from './store/task-queries.js';
import { ACTIVE_STATUSES } from './actions/task-states.js';
import { settle } from './actions/settle.js';
import type { TaskRow } from './store/task-store.js';
import { principalToStore } from './task-principal.js';
import { MicroBatcher } from '../../storage/micro-batcher.js';

/** Whether the task is active: no deletion, no change to it or its input list (DESIGN.md section 6). */
export const isActive = (t: TaskRow) => (ACTIVE_STATUSES as readonly string[]).includes(t.status);

export const taskNotFound = (tid: string, sid?: string) =>
  new AppError('TASK_NOT_FOUND', sid === undefined ? `no task ${tid}` : `no task ${tid} in service "${sid}"`, sid === undefined ? { tid } : { sid, tid });

export const taskActive = (t: TaskRow, what: string) =>
  new AppError('TASK_ACTIVE', `${what}: the task is processing`, { tid: t.tid, sid: t.sid, status: t.status });

/** 400 unless merged metadata (a PATCH adds to what is stored) can still be stored. */
export function checkMerged(metadata: Record<string, unknown>, where: string): void {
  const problem = metadataProblem(metadata);
  if (!problem) return;
  const path = ['body', where, ...problem.path.map(String)].join('.');
  throw new AppError('VALIDATION_FAILED', `the body is invalid: ${problem.message}`, { issues: [{ path, message: problem.message }] });
}

export interface TaskChange {
  name?: string;
  type?: string | null;
  metadata?: Record<string, unknown>;
}

/** 409: the user has `tasks.maxPerUser` tasks (as creator or owner) already. */
export const taskLimitReached = (user: string, maxTasks: number) =>
  new AppError('TASK_LIMIT_REACHED', `${user} has ${maxTasks} tasks, the most one user may have: delete some first`, { user, maxTasks });

export interface NewTaskInput {
  name: string;
  type?: string;
  metadata: Record<string, unknown>;
}

/**
 * Task operations of the Document Workflow API: rights (area `tasks`, own or
 * all), the "active" rule, and the task rows. The input and output lists go
 * through the shared list store (`src/areas/lists/store/list-store.ts`); starting and
 * stopping tasks is the actions' business. Routes call this; it never sees HTTP.
 */
export class TaskService {
  /**
   * The single-task reads of the same moment go as one statement (`tid =
   * ANY`): a hundred clients polling cost a round trip per batch, not per
   * request. A read's statement starts after it was asked for (it waits for
   * the one in flight, then goes in the next), so it sees every change
   * committed before the request came.
   */
  private readonly reads = new MicroBatcher<string, TaskRow | undefined>({
    many: async (tids) => {
      const byId = new Map((await tasksByIds(this.db, [...new Set(tids)])).map((t) => [t.tid, t]));
      return tids.map((tid) => byId.get(tid.toLowerCase()));
    },
  }, 2, 256, { gatherTurn: true });

  constructor(
    readonly db: Database,
    private readonly registry: ConnectorRegistry,
    readonly policy: Policy,
    /** Tasks one user may have as creator or owner (`tasks.maxPerUser`); the runtime's own work is not counted. */
    private readonly maxPerUser: number = Number.MAX_SAFE_INTEGER,
  ) {}

  /** The service's tasks facet: 404 for an unknown service or one whose connector runs no tasks. */
  facet(sid: string): TasksFacet {
    const connector = this.registry.get(sid);
    if (!connector.tasks) throw new AppError('NO_TASKS', `service "${sid}" has no tasks`, { sid });
    return connector.tasks;
  }

  /**
   * A task the caller may act on: 404 when absent (or in another service),
   * 403 when it is somebody else's and the caller sees only their own.
   */
  async get(p: Principal, sid: string | undefined, tid: string, action: 'read' | 'write' | 'delete' = 'read'): Promise<TaskRow> {
    if (sid !== undefined) this.facet(sid);
    const task = await this.reads.run(tid);
    // another user's task is reported absent, as by the actions: nothing of it is shown
    if (!task || (sid !== undefined && task.sid !== sid) || !this.policy.may(p, 'tasks', 'read', task)) {
      this.policy.require(p, 'tasks', 'read'); // 403 without the area right at all
      throw taskNotFound(tid, sid);
    }
    this.policy.require(p, 'tasks', action, task);
    return task;
  }

  /**
   * `force`: the status brought up to date from the per-item states now,
   * instead of waiting for the workers (a processing task whose items have
   * all finished, say after a worker died between an item's last report and
   * the status update), then the task read again.
   */
  async refresh(p: Principal, sid: string, tid: string): Promise<TaskRow> {
    const task = await this.get(p, sid, tid);
    if (!isActive(task)) return task;
    await settle(this.db, tid);
    return (await store.getTask(this.db, tid)) ?? task;
  }

  /**
   * Whose task count a new task adds to: its creator (by every identity the
   * creator goes by) and, when it is created for somebody else, its owner.
   * The runtime's own work (a system principal: intakes) counts for nobody:
   * an intake's tasks all have one system creator, and its volume is bounded
   * by who may drop files where it reads, not by a user.
   */
  private counted(p: Principal, owner: string | null): { user: string; identities: string[] }[] {
    if (p.system) return [];
    const out = [{ user: p.user, identities: p.identities.length > 0 ? p.identities : [p.user] }];
    if (owner !== null && !out[0]!.identities.includes(owner)) out.push({ user: owner, identities: [owner] });
    return out;
  }

  /** 409 `TASK_LIMIT_REACHED` when one of `users` has `maxPerUser` tasks or more (`extra`: a task of theirs not committed yet, counted). */
  private async checkTaskCount(sql: Sql, users: { user: string; identities: string[] }[], extra: number): Promise<void> {
    for (const u of users) {
      if (await countTasksOf(sql, u.identities, this.maxPerUser + 1) > this.maxPerUser - 1 + extra) throw taskLimitReached(u.user, this.maxPerUser);
    }
  }

  /**
   * Creates the task and, in the same transaction, whatever `fill` adds (its
   * lists and items): a failure anywhere leaves nothing behind. Past
   * `tasks.maxPerUser` for its creator or owner: 409, checked before
   * anything is read or written, and again under a per-user lock just before
   * the commit, so concurrent creations cannot pass the limit together.
   */
  async create<T>(
    p: Principal, sid: string, input: NewTaskInput, owner: string | null,
    fill: (tx: Tx, task: TaskRow) => Promise<T>, tid: string = randomUUID(),
  ): Promise<{ task: TaskRow; filled: T }> {
    this.facet(sid);
    this.policy.require(p, 'tasks', 'write');
    assertValidText(input.name, 'the task name');
    const counted = this.counted(p, owner);
    await this.checkTaskCount(this.db, counted, 0);
    return this.db.transaction(async (tx) => {
      const task = await store.insertTask(tx, {
        tid, sid, name: input.name, type: input.type ?? null, metadata: input.metadata, creator: p.user, owner,
        principal: principalToStore(p, owner),
      });
      const filled = await fill(tx, task);
      task.progress = await store.recountProgress(tx, tid);
      if (counted.length > 0) {
        // held until the commit: the next creation for these users counts this task
        await store.lockTaskCounts(tx, counted.map((u) => u.user));
        await this.checkTaskCount(tx, counted, 1);
      }
      return { task, filled };
    });
  }

  /** PUT (`replace`: metadata wholesale) or PATCH (`merge`: key by key, none removed); 409 while processing. */
  async update(p: Principal, sid: string, tid: string, change: TaskChange, mode: 'replace' | 'merge'): Promise<TaskRow> {
    await this.get(p, sid, tid, 'write');
    if (change.name !== undefined) assertValidText(change.name, 'the task name');
    return this.db.transaction(async (tx) => {
      const task = await store.getTask(tx, tid, { lock: true });
      if (!task) throw taskNotFound(tid, sid);
      if (isActive(task)) throw taskActive(task, 'cannot change the task');
      let metadata = task.metadata;
      if (mode === 'replace') metadata = change.metadata ?? {};
      else if (change.metadata) {
        metadata = mergeMetadata(task.metadata, change.metadata);
        checkMerged(metadata, 'metadata');
      }
      return store.updateTask(tx, tid, {
        name: change.name ?? task.name,
        type: change.type === undefined ? task.type : change.type,
        metadata,
      });
    });
  }

  /** Deletes the task with its lists (the documents stay); 409 while processing. */
  async remove(p: Principal, sid: string, tid: string): Promise<void> {
    await this.get(p, sid, tid, 'delete');
    await this.db.transaction(async (tx) => {
      const task = await store.getTask(tx, tid, { lock: true });
      if (!task) throw taskNotFound(tid, sid);
      if (isActive(task)) throw taskActive(task, 'cannot delete the task');
      await store.deleteTask(tx, tid);
    });
  }

  /** The scope of a search: the service (checked), the caller's own tasks unless they see all, the input document. */
  private scope(p: Principal, sid: string | undefined, inputDocument: string | undefined): TaskScope {
    if (sid !== undefined) this.facet(sid);
    return { sid, ownedBy: this.policy.listingScope(p, 'tasks'), inputDocument };
  }

  /** A search's page: the matching tasks' tids in the query's order (the rows follow through `rows`). */
  async search(p: Principal, sid: string | undefined, q: ListQuery, inputDocument?: string): Promise<string[]> {
    return pageTaskIds(this.db, this.scope(p, sid, inputDocument), q);
  }

  /** The rows of tids a search found, in that order (a task deleted since is left out); `cstats` only when asked for. */
  async rows(tids: readonly string[], opts = { cstats: true }): Promise<TaskRow[]> {
    return tasksByIds(this.db, tids, opts);
  }

  async count(p: Principal, sid: string | undefined, q: ListQuery, inputDocument?: string): Promise<number> {
    return countTasks(this.db, this.scope(p, sid, inputDocument), q);
  }
}
