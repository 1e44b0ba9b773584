import type { Area } from '../area.js';
import { listRoutes } from './routes.js';

/** Per-user lists and their items, imported and exported as JSON, CSV and RList. */
export const listsArea: Area = {
  name: 'lists',
  v1: listRoutes,
};
