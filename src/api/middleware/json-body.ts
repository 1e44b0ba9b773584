import getRawBody from 'raw-body';
import type { Middleware } from 'koa';
import { badRequest, unsupportedMediaType } from '../../errors/app-error.js';
import { requestBody } from './body-timeout.js';

/**
 * Reads a JSON request body into `ctx.state.body`, used only on routes that take
 * JSON (content routes stream the request instead). Checks: media type is JSON,
 * size within the limit (413), valid JSON (400), and the body arriving in time
 * (408, `body-timeout.ts`). An empty body is `undefined`.
 */
export function jsonBody(limit: string, opts: { optional?: boolean } = {}): Middleware {
  return async (ctx, next) => {
    const length = ctx.request.length;
    const hasBody = ctx.request.type !== '' || (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      if (!opts.optional) throw badRequest('BODY_REQUIRED', 'a JSON body is required');
      ctx.state.body = undefined;
      return next();
    }
    if (!ctx.is('application/json', 'application/*+json')) {
      throw unsupportedMediaType(`expected Content-Type application/json, got ${ctx.get('content-type') || 'none'}`);
    }
    const raw = await getRawBody(requestBody(ctx), { length, limit, encoding: 'utf8' });
    if (raw.trim() === '') {
      if (!opts.optional) throw badRequest('BODY_REQUIRED', 'a JSON body is required');
      ctx.state.body = undefined;
      return next();
    }
    try {
      ctx.state.body = JSON.parse(raw);
    } catch (err) {
      throw badRequest('INVALID_JSON', `the body is not valid JSON: ${(err as Error).message}`);
    }
    return next();
  };
}
