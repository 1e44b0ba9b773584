import getRawBody from 'raw-body';
import type { Middleware } from 'koa';
import { AppError } from '../../errors/app-error.js';
import { hasNul, nulRefused } from '../../errors/input-errors.js';
import { checkJsonNumbers } from '../../formats/json-numbers.js';
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

const MAX_DEPTH = 64;

/**
 * Refuses, with 400 and nothing changed, what would fail or misbehave later:
 * - a NUL character (`\u0000`, only ever written escaped in JSON) in any string
 *   or key: PostgreSQL text and jsonb cannot hold it;
 * - a `__proto__` key: JSON.parse keeps it as a plain key, but every plain
 *   object it is copied into (zod, merges) would take it as a prototype and
 *   drop it silently, so it is refused rather than half-stored;
 * - nesting deeper than 64 levels, which recursive consumers (JSON.stringify
 *   when storing) would answer with a stack overflow.
 * Iterative, so a hostile nesting cannot overflow the stack here either.
 */
export function checkValue(root: unknown): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: root, path: '$', depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (hasNul(v)) throw nulRefused(`the body at ${path}`);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_DEPTH) throw new AppError('JSON_TOO_DEEP', `the body nests deeper than ${MAX_DEPTH} levels at ${path.slice(0, 200)}`);
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: `${path}[${i}]`, depth: depth + 1 }));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      if (hasNul(k)) throw nulRefused(`a key in the body at ${path}`);
      if (k === '__proto__') throw new AppError('INVALID_KEY', `the key "__proto__" (at ${path}) is not allowed`, { path });
      stack.push({ v: item, path: `${path}.${k}`, depth: depth + 1 });
    }
  }
}
