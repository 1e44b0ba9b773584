import type { Area } from './area.js';
import { commandsArea } from './commands/index.js';
import { listsArea } from './lists/index.js';
import { repositoryArea } from './repository/index.js';
import { servicesArea } from './services/index.js';
import { tasksArea } from './tasks/index.js';
import { printJobsArea } from './print/jobs/index.js';
import { printersArea } from './print/printers/index.js';
import { flowsArea } from './print/flows/index.js';
import { printConfigArea } from './print/config/index.js';
import { statisticsArea } from './print/statistics/index.js';
import { eventsArea } from './events/index.js';
import { messagesArea } from './messages/index.js';
import { functionsArea } from './functions/index.js';
import { panelsArea } from './panels/index.js';
import { configTreeArea } from './config-tree/index.js';
import { sessionsArea } from './sessions/index.js';

/**
 * Every area, in one place. Order matters for routing only: commands before
 * repository, whose `/repo/:uuid` would otherwise take `/repo/command`.
 */
export const AREAS: readonly Area[] = [
  servicesArea, commandsArea, repositoryArea, tasksArea, listsArea,
  messagesArea, functionsArea,
  // the print API (`/v3`)
  printJobsArea, printersArea, flowsArea, printConfigArea, statisticsArea,
  // GET /v1/events
  eventsArea,
  // the rest of the workflow API (issue 23)
  panelsArea, configTreeArea, sessionsArea,
];
