import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';
import { parseListQuery } from '../../query/list-query.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { body, principal, query, uuidParam } from '../../api/context.js';
import { validate } from '../../api/validate.js';
import { presentMessage } from './present.js';
import { createMessageSchema, patchMessageSchema } from './schema.js';

/**
 * The per-user messages (spec: Messages): list, create and patch as the
 * spec lists them, plus `GET` and `DELETE` of one message (DESIGN.md leaves
 * them open; a UI needs to show and dismiss one).
 */
export function messageRoutes(s: Services): Router {
  const router = new Router();
  const messages = s.messages;
  const json = jsonBody(s.config.server.jsonLimit);

  router.get('/messages', async (ctx) => {
    const q = parseListQuery(query(ctx), []);
    ctx.body = (await messages.list(principal(ctx), q)).map(presentMessage);
  });

  router.post('/messages', json, async (ctx) => {
    const m = validate(createMessageSchema, body(ctx));
    ctx.body = presentMessage(await messages.create(principal(ctx), m));
  });

  router.get('/messages/:uuid', async (ctx) => {
    ctx.body = presentMessage(await messages.get(principal(ctx), uuidParam(ctx, 'uuid')));
  });

  router.patch('/messages/:uuid', json, async (ctx) => {
    const { links: _l, creator: _c, modified: _m, user: _u, ...change } = validate(patchMessageSchema, body(ctx));
    ctx.body = presentMessage(await messages.patch(principal(ctx), uuidParam(ctx, 'uuid'), change));
  });

  router.delete('/messages/:uuid', async (ctx) => {
    await messages.remove(principal(ctx), uuidParam(ctx, 'uuid'));
    ctx.status = 204;
  });

  return router;
}
