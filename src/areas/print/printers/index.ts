import type { Area } from '../../area.js';
import { printerRoutes } from './routes.js';

/** Printers (`/v3/printers/...`): configuration, pause/resume/redirect, messages, device checks, test jobs. */
export const printersArea: Area = { name: 'printers', v3: printerRoutes };
