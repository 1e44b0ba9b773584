import Koa from 'koa';
import Router from '@koa/router';
import type { Services } from '../runtime/services.js';
import { AppError, methodNotAllowed } from '../errors/app-error.js';
import { errorHandler } from './middleware/error-handler.js';
import { bodyTimeouts } from './middleware/body-timeout.js';
import { nosniff } from './middleware/nosniff.js';
import { observe } from './middleware/observe.js';
import { healthRoutes } from './health/routes.js';
import { docsRoutes } from './docs/routes.js';
import { printRootRoutes } from './print-root/routes.js';
import { authInfoRoutes, devIssuerRoutes } from './auth/routes.js';
import { authenticate } from './middleware/authenticate.js';
import { queueDashboard } from './admin/queue-dashboard.js';
import type { Area } from '../areas/area.js';
import type { LongLivedResponses } from './long-lived.js';
import type { Principal } from '../auth/principal.js';

export interface AppState {
  shuttingDown: boolean;
  /** Streams ended at shutdown (routes register through `keepOpen` in context.ts). */
  longLived: LongLivedResponses;
}

/**
 * The Koa application: observation and errors first, then the open routes
 * (health, docs, dev issuer, GET /v1/auth), then the authenticated /v1 API.
 * Anything unmatched gets the same error body: 404, or 405 with Allow.
 */
export function createApp(s: Services, state: AppState, areas: readonly Area[]): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true; // errors are logged by errorHandler, not by Koa's default printer
  app.use(observe(s.log, s.metrics));
  app.use(nosniff());
  app.use(errorHandler(s.log));
  app.use(bodyTimeouts({ idleMs: s.config.server.bodyIdleTimeoutMs, totalMs: s.config.server.bodyTimeoutMs }));
  app.use((ctx, next) => {
    ctx.state.longLived = state.longLived;
    return next();
  });
  // Nothing matched (allowedMethods below turns a known path with another method into 405).
  app.use(async (ctx, next) => {
    await next();
    if (ctx.body != null) return;
    if (ctx.status === 404) throw new AppError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
    if (ctx.status === 405) {
      const allow = String(ctx.response.get('Allow') ?? '').split(/,\s*/).filter(Boolean);
      throw methodNotAllowed('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}`, allow);
    }
    if (ctx.status === 501) {
      // A method no route implements at all (PROPFIND, PURGE): answered as 405 with the
      // path's Allow rather than 501, so a client error never counts as a server error.
      const matched = ((ctx as unknown as { matched?: { methods: string[] }[] }).matched ?? []);
      const allow = [...new Set(matched.flatMap((l) => l.methods))];
      if (allow.length === 0) throw new AppError('NOT_FOUND', `no route for ${ctx.method} ${ctx.path}`);
      throw methodNotAllowed('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on ${ctx.path}`, allow);
    }
  });

  // bull-board for admins (its own authentication: bearer or sign-in cookie)
  const dashboard = queueDashboard(s);
  if (dashboard) app.use(dashboard);

  const open = new Router();
  for (const r of [healthRoutes(s, state), docsRoutes(), printRootRoutes(), devIssuerRoutes(s)]) if (r) open.use(r.routes());
  const v1Open = new Router({ prefix: '/v1' });
  v1Open.use(authInfoRoutes(s).routes());

  // The parent routers authenticate once for every area route below them; an
  // area cannot leave a route open by forgetting a line. Router middleware runs
  // only once a route matched, so 404/405 need no token.
  // every authenticated caller is a session seen (`GET /v1/sessions`), on either API
  const seen = (p: Principal) => s.sessions.seen(p);
  const v1 = new Router({ prefix: '/v1' });
  v1.use(authenticate(s.verifier, seen));
  const v3 = new Router({ prefix: '/v3' });
  v3.use(authenticate(s.verifier, seen));
  for (const area of areas) {
    const r1 = area.v1?.(s);
    if (r1) v1.use(r1.routes());
    const r3 = area.v3?.(s);
    if (r3) v3.use(r3.routes());
  }

  for (const r of [open, v1Open, v1, v3]) {
    app.use(r.routes());
    app.use(r.allowedMethods());
  }
  return app;
}
