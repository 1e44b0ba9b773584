import type { Area } from '../area.js';
import { configTreeRoutes } from './routes.js';

/** The configuration tree (`/v1/config`): items addressed by a path, in the `configuration` area. */
export const configTreeArea: Area = {
  name: 'config-tree',
  v1: configTreeRoutes,
};
