import type { Area } from '../area.js';
import { actionRoutes } from './actions/action-routes.js';
import { ItemInterrupts } from './actions/item-interrupts.js';
import { ItemRunner } from './actions/item-runner.js';
import { settle } from './actions/settle.js';
import { pendingChunks } from './store/item-queries.js';
import { clearHook, dueHooks, failChunk, hookState, settleStranded } from './store/task-store.js';
import { taskRoutes } from './routes.js';

/**
 * Tasks of the services' connectors: the task rows, their input and output
 * lists, and their actions (`actions/`): the action route, the `task.items`
 * job that runs input items through the service's connector, the `task.hook`
 * job that brings a connector's handed-off work in line with the task's
 * status, and the reconcile sources for processing tasks whose items have
 * no live job and for hooks still owed.
 */
export const tasksArea: Area = {
  name: 'tasks',
  v1(s) {
    const router = taskRoutes(s);
    router.use(actionRoutes(s).routes());
    return router;
  },
  jobs(s) {
    const log = s.log.child({ component: 'task-items' });
    const interrupts = new ItemInterrupts(s.db, log);
    interrupts.listen();
    const runner = new ItemRunner({ db: s.db, documents: s.repository, registry: s.registry, outbox: s.outbox, interrupts, log });
    return {
      'task.items': (data, ctx) => runner.run(data, ctx),
      'task.hook': (data) => s.taskActions.runHook(data),
    };
  },
  async pending(s, limit) {
    // a task whose last item finished while its worker died before settling it has no job left to wait for
    const settled = await settleStranded(s.db);
    if (settled > 0) s.log.info({ settled }, 'settled processing tasks whose items had all finished');
    return [
      ...(await pendingChunks(s.db, limit)).map((data) => ({ name: 'task.items' as const, data })),
      // connectors' action hooks still owed (their job lost with Redis, or out of attempts)
      ...(await dueHooks(s.db, limit)).map((data) => ({ name: 'task.hook' as const, data })),
    ];
  },
  async abandon(s, job, reason) {
    if (job.name === 'task.hook') {
      // the hook keeps failing: the debt is given up, said in the log (the task's jobs stay as they are)
      const now = await hookState(s.db, job.data.tid);
      if (now?.due === job.data.n) await clearHook(s.db, job.data.tid, now.due, now.status);
      s.log.error({ sid: job.data.sid, tid: job.data.tid, reason }, 'a connector\'s action hook was given up: the task\'s handed-off work may not follow its status');
      return;
    }
    if (job.name !== 'task.items') return;
    const { tid, run, chunk } = job.data;
    await s.db.transaction((tx) => failChunk(tx, tid, run, chunk, `the item could not be run: ${reason}`));
    await settle(s.db, tid);
  },
};
