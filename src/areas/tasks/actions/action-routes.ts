import Router from '@koa/router';
import { jsonBody } from '../../../api/middleware/json-body.js';
import { body, param, principal, uuidParam } from '../../../api/context.js';
import { validate } from '../../../api/validate.js';
import type { Services } from '../../../runtime/services.js';
import { parseAction } from './action-service.js';
import { actionBody } from './schema.js';

/** `POST /v1/services/{sid}/tasks/{tid}/action` `{ "action": "start" }` -> 204; the work runs in workers. */
export function actionRoutes(s: Services): Router {
  const router = new Router();
  router.post('/services/:sid/tasks/:tid/action', jsonBody(s.config.server.jsonLimit), async (ctx) => {
    const sid = param(ctx, 'sid');
    s.registry.get(sid); // 404 for an unknown service before the body is judged
    const tid = uuidParam(ctx, 'tid');
    const action = parseAction(validate(actionBody, body(ctx)).action);
    await s.taskActions.act(principal(ctx), sid, tid, action);
    ctx.status = 204;
  });
  return router;
}
