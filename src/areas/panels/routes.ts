import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { body, param, principal, query } from '../../api/context.js';
import { validate } from '../../api/validate.js';
import { parseListQuery } from '../../query/list-query.js';
import { presentDefaultPanel, presentPanel } from './present.js';
import { panelBodySchema } from './schema.js';

/** Methods that would change a default panel: each answers 403 `PANEL_READONLY`. */
const CHANGES = ['post', 'put', 'patch', 'delete'] as const;

/** The Panels table of the spec: `/ui` (read-only defaults) and `/panels` (the user's own). */
export function panelRoutes(s: Services): Router {
  const router = new Router();
  const panels = s.panels;
  const json = jsonBody(s.config.server.jsonLimit);

  router.get('/ui', (ctx) => {
    ctx.body = panels.defaults(principal(ctx)).map(presentDefaultPanel);
  });
  router.get('/ui/:pid', (ctx) => {
    ctx.body = presentDefaultPanel(panels.defaultPanel(principal(ctx), param(ctx, 'pid')));
  });
  // "not editable or deletable": a change is refused as such (403), not as an unknown method (405)
  for (const method of CHANGES) {
    router[method]('/ui', (ctx) => panels.refuseDefaultChange(principal(ctx)));
    router[method]('/ui/:pid', (ctx) => panels.refuseDefaultChange(principal(ctx), param(ctx, 'pid')));
  }

  router.get('/panels', async (ctx) => {
    ctx.body = (await panels.list(principal(ctx), parseListQuery(query(ctx), []))).map(presentPanel);
  });

  router.post('/panels', json, async (ctx) => {
    const input = () => validate(panelBodySchema, body(ctx));
    ctx.body = presentPanel(await panels.create(principal(ctx), input, ctx.get('x-owner') || undefined));
  });

  router.get('/panels/:pid', async (ctx) => {
    const found = await panels.get(principal(ctx), param(ctx, 'pid'));
    ctx.body = found.kind === 'default' ? presentDefaultPanel(found.panel) : presentPanel(found.row);
  });

  router.put('/panels/:pid', json, async (ctx) => {
    const input = () => validate(panelBodySchema, body(ctx));
    ctx.body = presentPanel(await panels.replace(principal(ctx), param(ctx, 'pid'), input));
  });

  router.delete('/panels/:pid', async (ctx) => {
    ctx.body = presentPanel(await panels.remove(principal(ctx), param(ctx, 'pid')));
  });

  return router;
}
