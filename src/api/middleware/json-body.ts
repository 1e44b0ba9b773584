import getRawBody from 'raw-body';
import type { Middleware } from 'koa';
import { AppError } from '../../errors/app-error.js';
import { checkJsonNumbers, checkValue } from '../../formats/json-rules.js';
import { requestBody } from './body-timeout.js';

/**
 * Reads a JSON request body into `ctx.state.body`, used only on routes that take
 * JSON (content routes stream the request instead). Checks: media type is JSON,
 * size within the limit (413), valid JSON (400), the body arriving in time
 * (408, `body-timeout.ts`), and content every later step can hold (400, see
 * `checkValue`), numbers kept exactly (400 `INVALID_NUMBER`, `checkJsonNumbers`). An empty body is `undefined`.
 */
export function jsonBody(limit: string, opts: { optional?: boolean } = {}): Middleware {
  return async (ctx, next) => {
    const length = ctx.request.length;
    const hasBody = ctx.request.type !== '' || (length !== undefined && length > 0) || ctx.get('transfer-encoding') !== '';
    if (!hasBody) {
      if (!opts.optional) throw new AppError('BODY_REQUIRED', 'a JSON body is required');
      ctx.state.body = undefined;
      return next();
    }
    // the common header is taken as is; anything else (parameters, +json types, case) goes through type-is
    if (ctx.get('content-type') !== 'application/json' && !ctx.is('application/json', 'application/*+json')) {
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `expected Content-Type application/json, got ${ctx.get('content-type') || 'none'}`);
    }
    const raw = await getRawBody(requestBody(ctx), { length, limit, encoding: 'utf8' });
    if (raw.trim() === '') {
      if (!opts.optional) throw new AppError('BODY_REQUIRED', 'a JSON body is required');
      ctx.state.body = undefined;
      return next();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch (err) {
      throw new AppError('INVALID_JSON', `the body is not valid JSON: ${(err as Error).message}`);
    }
    checkValue(parsed);
    checkJsonNumbers(raw);
    ctx.state.body = parsed;
    return next();
  };
}
