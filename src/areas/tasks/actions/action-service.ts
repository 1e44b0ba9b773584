import type { Owned, Policy } from '../../../auth/policy.js';
import type { Principal } from '../../../auth/principal.js';
import { TASK_ACTIONS, type TaskAction, type TaskJobs } from '../../../connectors/facets/tasks.js';
import { stateStore } from '../../../connectors/lifecycle/state-store.js';
import { outboxPort } from '../../../connectors/ports.js';
import type { ConnectorRegistry } from '../../../connectors/registry.js';
import { AppError } from '../../../errors/app-error.js';
import type { Logger } from '../../../logging/logger.js';
import type { Outbox } from '../../../outbox/outbox.js';
import type { JobData } from '../../../queue/jobs.js';
import type { Database, Tx } from '../../../storage/driver/database.js';
import { MicroBatcher } from '../../../storage/micro-batcher.js';
import { reportedItems } from '../store/item-queries.js';
import * as store from '../store/task-store.js';
import { reportOf } from './present.js';
import { settle } from './settle.js';
import { TASK_TRANSITIONS, type TaskStatus } from './task-states.js';

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
        // resumes of tasks whose connector has a resume hook: owed in this transaction (see `runHook`)
        const hooked = requests.filter((r, i) => r.hook && byN.has(i + 1)).map((r) => r.tid);
        if (hooked.length > 0) await this.oweHooks(tx, await store.markHooksDue(tx, hooked));
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
      const moved = owned === false ? undefined : await this.starts.run({ sid, tid, from, to, ownedBy: owned, hook: action === 'resume' && !!facet.resume });
      if (!moved) return this.refusal(p, sid, tid, action, await store.getTask(this.d.db, tid, { cstats: false }));
      ran = moved.chunks.length;
    } else {
      await this.d.db.transaction(async (tx) => {
        // the transition itself takes the row lock; rights are checked on the row it returns
        // (a refusal rolls it back)
        const moved = await store.transition(tx, sid, tid, from, to, !!facet[action as 'pause' | 'abort']);
        if (!moved) return this.refusal(p, sid, tid, action, await store.getTask(tx, tid, { cstats: false }));
        this.check(p, sid, tid, moved);
        await store.closeOpenItems(tx, tid, action === 'pause' ? 'paused' : 'aborted', action === 'pause' ? 'task paused' : 'task aborted');
        await store.notifyInterrupt(tx, tid, moved.run, action === 'pause' ? 'pause' : 'abort');
        if (moved.hook_due !== null && facet[action as 'pause' | 'abort']) await this.oweHooks(tx, [{ sid, tid, n: moved.hook_due }]);
      });
    }
    // nothing left to run (every item done, or an empty input list): the status follows at once
    if (ran === 0) await settle(this.d.db, tid);
  }

  /** The `task.hook` jobs of hooks numbered in `tx` (the outbox: queued if and only if the action commits). */
  private async oweHooks(tx: Tx, due: readonly store.DueHook[]): Promise<void> {
    if (due.length > 0) await this.d.outbox.addMany(tx, due.map((d) => ({ name: 'task.hook' as const, data: d })));
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
   * The `task.hook` job: the connector's hook for work it handed off (print
   * jobs held, released, canceled), owed since the action numbered `n`
   * committed. It applies the hook of the task's present status, not of the
   * action that queued it, and clears the debt only if neither the status
   * nor the number moved meanwhile; else it looks again. So hooks of quick
   * successive actions (pause, resume) may run at once in any order: the
   * last to finish has applied the present status to every job. A hook acts
   * on each job only while the task keeps the status it read (the
   * connector's guard, `lockStatusIs`), so an older one never undoes a
   * newer one's change. A job whose
   * number is no longer owed does nothing (a newer one is queued, or ran).
   * A hook that throws fails the job, which is retried; the debt stays in
   * the task row for the reconciler.
   */
  async runHook({ sid, tid, n }: JobData<'task.hook'>): Promise<void> {
    // a service no longer configured has nothing to bring in line: its debt is cleared below
    const facet = this.d.registry.list().find((svc) => svc.sid === sid)?.connector.tasks;
    for (let round = 0; round < HOOK_ROUNDS; round++) {
      const now = await store.hookState(this.d.db, tid);
      if (!now || (round === 0 && now.due !== n)) return;
      const action = HOOK_OF_STATUS[now.status];
      const fn = action && facet?.[action];
      if (fn) {
        const rows = await reportedItems(this.d.db, tid);
        const task: TaskJobs = { sid, tid, jobs: new Map(rows.map((r) => [r.job_id!, reportOf(r)])) };
        const log = this.d.log.child({ sid, tid, hook: action });
        await fn.call(facet, task, { log, outbox: outboxPort(this.d.outbox, this.d.db), state: stateStore(this.d.db, sid) });
      }
      if (await store.clearHook(this.d.db, tid, now.due, now.status)) return;
    }
    throw new Error(`task ${tid} kept changing while its connector's hook ran (${HOOK_ROUNDS} rounds); retried`);
  }
}

/** How often one `task.hook` job looks again when the task moved while its hook ran. */
const HOOK_ROUNDS = 10;

/** The hook that brings handed-off work in line with each status (the others have none). */
const HOOK_OF_STATUS: Partial<Record<TaskStatus, 'pause' | 'resume' | 'abort'>> = { paused: 'pause', processing: 'resume', aborted: 'abort' };
