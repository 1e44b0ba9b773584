import type { Area } from '../area.js';
import { functionRoutes } from './routes.js';

/** Synchronous, service-specific functions (the connectors' `functions` facet). */
export const functionsArea: Area = {
  name: 'functions',
  v1: functionRoutes,
};
