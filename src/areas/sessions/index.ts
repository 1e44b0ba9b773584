import type { Area } from '../area.js';
import { sessionRoutes } from './routes.js';

/** Open sessions per user (`/v1/sessions`); expired ones are removed by housekeeping. */
export const sessionsArea: Area = {
  name: 'sessions',
  v1: sessionRoutes,
  async housekeeping(s) {
    return { deadSessions: await s.sessions.removeDead() };
  },
};
