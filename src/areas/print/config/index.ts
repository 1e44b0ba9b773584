import type { Area } from '../../area.js';
import { printConfigRoutes } from './routes.js';

/** `/v3/configs/` and `/v3/auth/userroles`. */
export const printConfigArea: Area = { name: 'print-config', v3: printConfigRoutes };
