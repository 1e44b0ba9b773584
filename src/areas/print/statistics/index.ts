import type { Area } from '../../area.js';
import { statisticsRoutes } from './routes.js';

/** Print statistics (`/v3/statistics/...`). */
export const statisticsArea: Area = { name: 'statistics', v3: statisticsRoutes };
