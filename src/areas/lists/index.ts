import type { Area } from '../area.js';
import { ListService } from './list-service.js';
import { listRoutes } from './routes.js';

/** Per-user lists and their items, imported and exported as JSON, CSV and RList. */
export const listsArea: Area = {
  name: 'lists',
  v1(s) {
    const lists = new ListService({
      db: s.db,
      policy: s.policy,
      log: s.log.child({ component: 'lists' }),
      maxItems: s.config.lists.maxItems,
      fetch: { timeoutMs: s.config.commands.importTimeoutMs, allowPrivate: s.config.commands.importAllowPrivate },
    });
    return listRoutes(s, lists);
  },
};
