import type { Area } from '../area.js';
import { messageRoutes } from './routes.js';

/** Per-user messages: the routes, and housekeeping's deletion of expired ones. */
export const messagesArea: Area = {
  name: 'messages',
  v1: messageRoutes,
  async housekeeping(s) {
    return { messagesExpired: await s.messages.deleteExpired() };
  },
};
