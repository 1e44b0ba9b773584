import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { body, param, principal, uuidParam } from '../../api/context.js';
import { validate } from '../../api/validate.js';
import { launchSchema } from './command-params.js';

/** Repository commands (spec: Repositories, `/repo/command`): launch, then poll the status. */
export function commandRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);

  router.post('/services/:sid/repo/command', json, async (ctx) => {
    const sid = param(ctx, 'sid');
    s.repository.backend(sid); // 404 for a service without a repository before the body is judged
    const { command, parameters } = validate(launchSchema, body(ctx));
    ctx.body = await s.commands.launch(principal(ctx), sid, command, parameters);
  });

  router.get('/services/:sid/repo/command/:cid', async (ctx) => {
    ctx.body = await s.commands.status(principal(ctx), param(ctx, 'sid'), uuidParam(ctx, 'cid'));
  });

  return router;
}
