import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { principal, param } from '../../api/context.js';
import { presentService } from './present.js';

/** GET /services, GET /services/{sid}: the configured services and what each can do. */
export function serviceRoutes(s: Services): Router {
  const router = new Router();
  router.get('/services', (ctx) => {
    s.permissions.requireAnyRole(principal(ctx));
    ctx.body = s.registry.list().map(({ sid, connector, config }) => presentService(sid, connector, config));
  });
  router.get('/services/:sid', (ctx) => {
    s.permissions.requireAnyRole(principal(ctx));
    const sid = param(ctx, 'sid');
    ctx.body = presentService(sid, s.registry.get(sid), s.registry.config(sid));
  });
  return router;
}
