import type { Area } from '../../area.js';
import { flowRoutes } from './routes.js';

/** Print flows (`/v3/flows/...`); the engine runs them in preprocessing (`src/areas/print/flows/`). */
export const flowsArea: Area = { name: 'flows', v3: flowRoutes };
