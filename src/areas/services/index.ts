import type { Area } from '../area.js';
import { serviceRoutes } from './routes.js';

/** The configured services and their capabilities (`GET /v1/services`). */
export const servicesArea: Area = {
  name: 'services',
  v1: serviceRoutes,
};
