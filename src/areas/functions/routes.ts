import Router from '@koa/router';
import getRawBody from 'raw-body';
import type { Context } from 'koa';
import type { Services } from '../../runtime/services.js';
import { AppError } from '../../errors/app-error.js';
import { jsonBody } from '../../api/middleware/json-body.js';
import { requestBody } from '../../api/middleware/body-timeout.js';
import { body, param, principal } from '../../api/context.js';
import { jsonParams, MAX_PAIRS_TEXT, parsePairs } from './function-params.js';
import { presentFunction } from './present.js';

/** True when the request carries a body (a length above zero, or chunked). */
function hasBody(ctx: Context): boolean {
  const length = ctx.request.length;
  return (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
}

/**
 * A service's functions (spec: Functions). A call's parameters come as the
 * spec's `key::value;key::value` (the query string itself, or a `text/plain`
 * body) or as a JSON object body; never both.
 */
export function functionRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);

  router.get('/services/:sid/function', (ctx) => {
    const sid = param(ctx, 'sid');
    ctx.body = s.functions.list(principal(ctx), sid).map((d) => presentFunction(sid, d));
  });

  router.post('/services/:sid/function/:fid', async (ctx) => {
    const pairs = ctx.querystring;
    if (!hasBody(ctx)) {
      ctx.state.params = parsePairs(pairs);
    } else {
      if (pairs !== '') throw new AppError('INVALID_PARAMETERS', 'give the parameters either in the query string or as the body, not both');
      if (ctx.is('text/plain')) {
        // over the limit: 413 PAYLOAD_TOO_LARGE (the error middleware translates raw-body's errors)
        const text = await getRawBody(requestBody(ctx), { length: ctx.request.length, limit: MAX_PAIRS_TEXT, encoding: 'utf8' });
        ctx.state.params = parsePairs(text.trim());
      } else {
        await json(ctx, async () => undefined);
        ctx.state.params = jsonParams(body(ctx));
      }
    }
    const aborted = new AbortController();
    // the response's close, not the request's (which comes once the body is read): the client went away
    const onClose = () => {
      if (!ctx.res.writableFinished) aborted.abort(new Error('the client went away'));
    };
    ctx.res.once('close', onClose);
    try {
      const result = await s.functions.call(principal(ctx), param(ctx, 'sid'), param(ctx, 'fid'), ctx.state.params as Record<string, unknown>, aborted.signal);
      ctx.body = result === undefined ? {} : result;
    } finally {
      ctx.res.off('close', onClose);
    }
  });

  return router;
}
