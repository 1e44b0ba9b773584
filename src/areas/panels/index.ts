import type { Area } from '../area.js';
import { panelRoutes } from './routes.js';

/** UI panels: the read-only defaults of the configuration (`/v1/ui`) and each user's own (`/v1/panels`). */
export const panelsArea: Area = {
  name: 'panels',
  v1: panelRoutes,
};
