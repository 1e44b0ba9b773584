import Router from '@koa/router';
import type { Context } from 'koa';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { body, principal, singleQuery } from '../../api/context.js';
import { jsonArrayBody } from '../../api/json-array-stream.js';
import { validate } from '../../api/validate.js';
import { configItemSchema } from './schema.js';

/** The query of a `/config` operation: only the parameters it names, each once (400 otherwise). */
function configQuery(ctx: Context, allowed: readonly string[]): Record<string, string> {
  const q = singleQuery(ctx);
  for (const key of Object.keys(q)) {
    if (!allowed.includes(key)) throw new AppError('INVALID_QUERY', `"${key.slice(0, 40)}" is not a parameter of ${ctx.method} /config (${allowed.join(', ')})`, { parameter: key.slice(0, 40) });
  }
  return q;
}

/** `keys`: absent, `false`, `0` -> false; empty, `true`, `1` -> true; anything else 400. */
function keysFlag(q: Record<string, string>): boolean {
  const v = Object.hasOwn(q, 'keys') ? q.keys : undefined;
  if (v === undefined || v === 'false' || v === '0') return false;
  if (v === '' || v === 'true' || v === '1') return true;
  throw new AppError('INVALID_QUERY', 'keys must be true or false', { parameter: 'keys' });
}

/** The Configuration table of the spec: one tree, items addressed by `?path=a/b/c`. */
export function configTreeRoutes(s: Services): Router {
  const router = new Router();
  const tree = s.configTree;
  const json = jsonBody(s.config.server.jsonLimit);

  router.get('/config', async (ctx) => {
    const q = configQuery(ctx, ['path', 'keys']);
    if (keysFlag(q)) {
      const keys = await tree.keys(principal(ctx), q.path);
      ctx.type = 'application/json';
      ctx.body = await jsonArrayBody(keys, (err) => s.log.error({ err, path: ctx.path }, 'configuration keys failed after the answer began: the response is cut'));
      return;
    }
    ctx.body = await tree.get(principal(ctx), q.path);
  });

  router.put('/config', json, async (ctx) => {
    const { path } = configQuery(ctx, ['path']);
    ctx.body = await tree.put(principal(ctx), path, () => validate(configItemSchema, body(ctx)));
  });

  router.delete('/config', async (ctx) => {
    ctx.body = await tree.remove(principal(ctx), configQuery(ctx, ['path']).path);
  });

  return router;
}
