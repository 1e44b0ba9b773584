import type { Owned, Policy } from '../../../auth/policy.js';
import type { Principal } from '../../../auth/principal.js';
import { TASK_ACTIONS, type TaskAction, type TaskJobs, type TasksFacet } from '../../../connectors/facets/tasks.js';
import { stateStore } from '../../../connectors/lifecycle/state-store.js';
import { outboxPort, type ConnectorPorts } from '../../../connectors/ports.js';
import type { ConnectorRegistry } from '../../../connectors/registry.js';
import { AppError } from '../../../errors/app-error.js';
import type { Logger } from '../../../logging/logger.js';
import type { Outbox } from '../../../outbox/outbox.js';
import type { Database } from '../../../storage/driver/database.js';
import { MicroBatcher } from '../../../storage/micro-batcher.js';
import { reportedItems } from '../store/item-queries.js';
import * as store from '../store/task-store.js';
import { reportOf } from './present.js';
import { settle } from './settle.js';
import { TASK_TRANSITIONS } from './task-states.js';

export interface ActionDeps {
  db: Database;
  registry: ConnectorRegistry;
  policy: Policy;
  outbox: Outbox;
  log: Logger;
  /** Items per `task.items` job (`queues.taskItemsPerJob`). */
  itemsPerJob: number;
}

/** 400 for a name that is not one of the API's actions. */
export function parseAction(name: string): TaskAction {
  if (!(TASK_ACTIONS as readonly string[]).includes(name)) {
    throw new AppError('UNKNOWN_ACTION', `unknown action "${name.slice(0, 40)}"`, { actions: [...TASK_ACTIONS] });
  }
  return name as TaskAction;
}

/**
 * The task actions (DESIGN.md section 6): the transition is checked against
 * the state table under the task's row lock, and everything it changes is
 * written in that one transaction: the status, the item rows, the jobs (the
 * outbox; the request never waits on Redis) and, for pause and abort, the
 * interrupt that stops running items in every worker process.
 */
export class ActionService {
  /** The starts and resumes of concurrent requests (one per task), as one statement. */
  private readonly starts: MicroBatcher<store.StartRequest, store.StartedRun | undefined>;

  constructor(private readonly d: ActionDeps) {
    this.starts = new MicroBatcher({
      // the tasks' row locks first, in a statement of their own: the start's statement then reads a
      // snapshot taken after every input change that held one committed (see `lockForStart`)
      many: (requests) => d.db.transaction(async (tx) => {
        await store.lockForStart(tx, requests.map((r) => r.tid));
        const rows = await d.outbox.addEachWith<'task.items', store.StartedRun>(tx, store.startRunStatement(requests, d.itemsPerJob), 'task.items',
          requests.map(({ sid, tid }) => ({ sid, tid, run: 1, chunk: 0 })));
        const byN = new Map(rows.map((r) => [r.n, r]));
        return requests.map((_, i) => byN.get(i + 1));
      }),
      key: (r) => r.tid,
    }, 1, 64, { gatherTurn: true }); // one in flight, the rest wait and go together (as ItemRunner's batchers)
  }

  async act(p: Principal, sid: string, tid: string, action: TaskAction): Promise<void> {
    const facet = this.d.registry.get(sid).tasks;
    // as on every task route: a service without the tasks facet has no tasks
    if (!facet) throw new AppError('NO_TASKS', `service "${sid}" has no tasks`, { sid });
    if (!facet.actions.includes(action)) {
      throw new AppError('ACTION_UNSUPPORTED', `service "${sid}" does not offer the ${action} action`, { sid, action, actions: [...facet.actions] });
    }
    const { from, to } = TASK_TRANSITIONS[action];
    let ran: number | undefined;
    if (action === 'start' || action === 'resume') {
      // one transaction (shared with other tasks' starts meanwhile): the row locks, then one statement
      // with the transition (rights in its WHERE), the run's item rows and its jobs; only when nothing
      // moved does a second read say why (404, 403 or 409)
      const owned = this.d.policy.ownedBy(p, 'tasks', ['read', 'act']);
      const moved = owned === false ? undefined : await this.starts.run({ sid, tid, from, to, ownedBy: owned });
      if (!moved) return this.refusal(p, sid, tid, action, await store.getTask(this.d.db, tid, { cstats: false }));
      ran = moved.chunks.length;
    } else {
      await this.d.db.transaction(async (tx) => {
        // the transition itself takes the row lock; rights are checked on the row it returns
        // (a refusal rolls it back)
        const moved = await store.transition(tx, sid, tid, from, to);
        if (!moved) return this.refusal(p, sid, tid, action, await store.getTask(tx, tid, { cstats: false }));
        this.check(p, sid, tid, moved);
        await store.closeOpenItems(tx, tid, action === 'pause' ? 'paused' : 'aborted', action === 'pause' ? 'task paused' : 'task aborted');
        await store.notifyInterrupt(tx, tid, moved.run, action === 'pause' ? 'pause' : 'abort');
      });
    }
    // nothing left to run (every item done, or an empty input list): the status follows at once
    if (ran === 0) await settle(this.d.db, tid);
    if (action !== 'start') await this.hook(facet, action, sid, tid);
  }

  /** 404 for a task the caller may not see (another user's is reported absent, never shown), 403 without the act right. */
  private check(p: Principal, sid: string, tid: string, task: Owned): void {
    if (!this.d.policy.may(p, 'tasks', 'read', task)) throw new AppError('TASK_NOT_FOUND', `no task ${tid} in service "${sid}"`, { sid, tid });
    this.d.policy.require(p, 'tasks', 'act', task);
  }

  /** Why the transition did not happen: the task is absent (404), not the caller's (404/403), or in the wrong status (409). */
  private async refusal(p: Principal, sid: string, tid: string, action: TaskAction, task: store.TaskRow | undefined): Promise<never> {
    if (!task || task.sid !== sid) throw new AppError('TASK_NOT_FOUND', `no task ${tid} in service "${sid}"`, { sid, tid });
    this.check(p, sid, tid, task);
    throw new AppError('ACTION_NOT_ALLOWED', `cannot ${action} a task that is ${task.status}`, {
      action, status: task.status, allowedFrom: [...TASK_TRANSITIONS[action].from],
    });
  }

  /**
   * The connector's hook for work it handed off (print jobs). The action has
   * committed: a failing hook is logged, not answered as a failed action.
   */
  private async hook(facet: TasksFacet, action: Exclude<TaskAction, 'start'>, sid: string, tid: string): Promise<void> {
    const fn = facet[action];
    if (!fn) return;
    const log = this.d.log.child({ sid, tid, action });
    try {
      const rows = await reportedItems(this.d.db, tid);
      const task: TaskJobs = { sid, tid, jobs: new Map(rows.map((r) => [r.job_id!, reportOf(r)])) };
      const ports: ConnectorPorts = { log, outbox: outboxPort(this.d.outbox, this.d.db), state: stateStore(this.d.db, sid) };
      await fn.call(facet, task, ports);
    } catch (err) {
      log.warn({ err }, 'the connector\'s action hook failed');
    }
  }
}
