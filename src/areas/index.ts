import type { Area } from './area.js';
import { commandsArea } from './commands/index.js';
import { listsArea } from './lists/index.js';
import { repositoryArea } from './repository/index.js';
import { servicesArea } from './services/index.js';
import { tasksArea } from './tasks/index.js';

/**
 * Every area, in one place. Order matters for routing only: commands before
 * repository, whose `/repo/:uuid` would otherwise take `/repo/command`.
 */
export const AREAS: readonly Area[] = [servicesArea, commandsArea, repositoryArea, tasksArea, listsArea];
