import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { authenticate } from '../middleware/authenticate.js';
import { principal, param } from '../context.js';
import type { Connector } from '../../connectors/connector.js';
import type { ServiceConfig } from '../../config/schema.js';

function present(sid: string, connector: Connector, config: ServiceConfig) {
  const caps = connector.capabilities;
  const base = `/v1/services/${encodeURIComponent(sid)}`;
  return {
    sid,
    type: connector.type,
    title: config.title ?? sid,
    description: config.description ?? '',
    capabilities: {
      repository: !!caps.repository,
      commands: caps.repository?.commands ?? [],
      tasks: caps.tasks ? { actions: caps.tasks.actions } : null,
      functions: !!caps.functions,
      intake: !!caps.intake,
    },
    links: {
      self: { href: base },
      ...(caps.repository ? { repo: { href: `${base}/repo` } } : {}),
      ...(caps.tasks ? { tasks: { href: `${base}/tasks` } } : {}),
      ...(caps.functions ? { functions: { href: `${base}/function` } } : {}),
    },
  };
}

/** GET /services, GET /services/{sid}: the configured services and what each can do. */
export function serviceRoutes(s: Services): Router {
  const router = new Router();
  router.use(authenticate(s.verifier));
  router.get('/services', (ctx) => {
    s.permissions.requireAnyRole(principal(ctx));
    ctx.body = s.registry.list().map(({ sid, connector, config }) => present(sid, connector, config));
  });
  router.get('/services/:sid', (ctx) => {
    s.permissions.requireAnyRole(principal(ctx));
    const sid = param(ctx, 'sid');
    ctx.body = present(sid, s.registry.get(sid), s.registry.config(sid));
  });
  return router;
}
