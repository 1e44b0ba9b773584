import type { Area } from '../../area.js';
import type { Services } from '../../../runtime/services.js';
import { ActionService } from './action-service.js';
import { actionRoutes } from './action-routes.js';
import { ItemInterrupts } from './item-interrupts.js';
import { ItemRunner } from './item-runner.js';
import { failChunk, settleStranded } from '../store/task-store.js';
import { pendingChunks } from '../store/item-queries.js';
import { settle } from './settle.js';

export { ActionService } from './action-service.js';
export { presentCstats } from './present.js';
export { itemReporter } from './item-reporter.js';
export { reportedItems } from '../store/item-queries.js';
export { ACTIVE_STATUSES, TASK_STATUSES, TASK_TRANSITIONS, type TaskStatus } from './task-states.js';

/** One action service per process's services (the routes and other areas share it). */
const services = new WeakMap<Services, ActionService>();
export function actionService(s: Services): ActionService {
  let a = services.get(s);
  if (!a) {
    a = new ActionService({
      db: s.db, registry: s.registry, policy: s.policy, outbox: s.outbox,
      log: s.log.child({ component: 'task-actions' }), itemsPerJob: s.config.queues.taskItemsPerJob,
    });
    services.set(s, a);
  }
  return a;
}

/**
 * Task actions: the action route, the `task.items` job that runs input items
 * through the service's connector, and the reconcile source for processing
 * tasks whose items have no live job. Mounted by the tasks area (its index
 * spreads these members), or on its own until that area exists.
 */
export const taskActionsArea: Area = {
  name: 'task-actions',
  v1: (s) => actionRoutes(s, actionService(s)),
  jobs(s) {
    const log = s.log.child({ component: 'task-items' });
    const interrupts = new ItemInterrupts(s.db, log);
    interrupts.listen();
    const runner = new ItemRunner({ db: s.db, registry: s.registry, outbox: s.outbox, interrupts, log });
    return { 'task.items': (data, ctx) => runner.run(data, ctx) };
  },
  async pending(s, limit) {
    // a task whose last item finished while its worker died before settling it has no job left to wait for
    const settled = await settleStranded(s.db);
    if (settled > 0) s.log.info({ settled }, 'settled processing tasks whose items had all finished');
    return (await pendingChunks(s.db, limit)).map((data) => ({ name: 'task.items' as const, data }));
  },
  async abandon(s, job, reason) {
    if (job.name !== 'task.items') return;
    const { tid, run, chunk } = job.data;
    await s.db.transaction((tx) => failChunk(tx, tid, run, chunk, `the item could not be run: ${reason}`));
    await settle(s.db, tid);
  },
};
