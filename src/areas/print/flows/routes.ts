import Router from '@koa/router';
import { body, param, principal } from '../../../api/context.js';
import { jsonBody } from '../../../api/middleware/json-body.js';
import type { Services } from '../../../runtime/services.js';
import { presentFlow } from './present.js';

/** Flows (print API 11.2.0 `/v3/flows/...`). The body is checked by `validateFlow` in the service. */
export function flowRoutes(s: Services): Router {
  const router = new Router();
  const flows = s.printFlows;
  const json = jsonBody(s.config.server.jsonLimit);

  router.get(['/flows', '/flows/'], async (ctx) => {
    ctx.body = (await flows.list(principal(ctx))).map(presentFlow);
  });

  router.post(['/flows', '/flows/'], json, async (ctx) => {
    const row = await flows.create(principal(ctx), body(ctx));
    ctx.set('Location', `/v3/flows/${encodeURIComponent(row.name)}`);
    ctx.body = presentFlow(row);
  });

  router.get('/flows/:name', async (ctx) => {
    ctx.body = presentFlow(await flows.get(principal(ctx), param(ctx, 'name')));
  });

  router.delete('/flows/:name', async (ctx) => {
    ctx.body = presentFlow(await flows.remove(principal(ctx), param(ctx, 'name')));
  });

  return router;
}
