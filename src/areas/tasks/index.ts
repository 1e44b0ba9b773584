import type { Area } from '../area.js';
import { taskRoutes } from './routes.js';

/** Tasks of the services' connectors: the task rows, their input and output lists (actions: `actions/`). */
export const tasksArea: Area = {
  name: 'tasks',
  v1: taskRoutes,
};
