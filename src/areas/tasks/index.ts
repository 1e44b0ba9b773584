import type { Area } from '../area.js';
import { actionService, taskActionsArea } from './actions/index.js';
import { actionRoutes } from './actions/action-routes.js';
import { taskRoutes } from './routes.js';

/**
 * Tasks of the services' connectors: the task rows and their input and output
 * lists (this folder), and the actions with their job, reconcile source and
 * per-item states (`actions/`), as one area.
 */
export const tasksArea: Area = {
  ...taskActionsArea,
  name: 'tasks',
  v1(s) {
    const router = taskRoutes(s);
    router.use(actionRoutes(s, actionService(s)).routes());
    return router;
  },
};
