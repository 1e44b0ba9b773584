import type { Area } from '../area.js';
import { taskActionsArea } from './actions/index.js';
import { taskRoutes } from './routes.js';

/**
 * Tasks of the services' connectors: the task rows, their input and output
 * lists, and their actions (`actions/`: the action route, the `task.items`
 * job, its reconcile source).
 */
export const tasksArea: Area = {
  name: 'tasks',
  v1(s) {
    const router = taskRoutes(s);
    router.use(taskActionsArea.v1!(s).routes());
    return router;
  },
  jobs: taskActionsArea.jobs,
  pending: taskActionsArea.pending,
  abandon: taskActionsArea.abandon,
};
