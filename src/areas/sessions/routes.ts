import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { principal } from '../../api/context.js';

/** `GET /sessions`: `{ "count": n }`, the caller's open sessions (spec: Functions, sessions, identity provider). */
export function sessionRoutes(s: Services): Router {
  const router = new Router();
  router.get('/sessions', async (ctx) => {
    ctx.body = await s.sessions.count(principal(ctx));
  });
  return router;
}
