import type { Area } from '../area.js';
import { deleteOldEvents } from '../../events/event-store.js';
import { eventRoutes } from './routes.js';

/** `GET /v1/events`; housekeeping drops published events past `events.retentionSec`. */
export const eventsArea: Area = {
  name: 'events',
  v1: eventRoutes,
  async housekeeping(s) {
    return { events: await deleteOldEvents(s.db, s.config.events.retentionSec) };
  },
};
