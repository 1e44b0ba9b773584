import type { Context } from 'koa';
import type { Principal } from '../auth/principal.js';
import { AppError } from '../errors/app-error.js';
import type { RawQuery } from '../query/list-query.js';
import type { LongLivedResponses } from './long-lived.js';

/** Typed access to what middlewares put into `ctx.state`. */
export function principal(ctx: Context): Principal {
  const p = ctx.state.principal as Principal | undefined;
  if (!p) throw new Error('route is missing the authenticate middleware');
  return p;
}

export function body(ctx: Context): unknown {
  return ctx.state.body;
}

export function query(ctx: Context): RawQuery {
  return ctx.query as RawQuery;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path parameter that must be a UUID (400 otherwise: nothing else reaches storage). */
export function uuidParam(ctx: Context, name: string): string {
  const value = (ctx.params as Record<string, string>)[name] ?? '';
  if (!UUID.test(value)) throw new AppError('INVALID_UUID', `"${value.slice(0, 80)}" is not a UUID`, { parameter: name });
  return value.toLowerCase();
}

export function param(ctx: Context, name: string): string {
  return (ctx.params as Record<string, string>)[name] ?? '';
}

/**
 * Marks this response as long-lived (an event stream): at shutdown `end` is
 * called at once (write a last event, end the stream) instead of the server
 * waiting for it. Forgotten when the client goes away.
 */
export function keepOpen(ctx: Context, end: () => void): void {
  const registry = ctx.state.longLived as LongLivedResponses | undefined;
  if (!registry) throw new Error('the app did not provide the long-lived registry');
  const forget = registry.add(() => {
    // once the last bytes are out, close the connection too: the server is going away
    ctx.res.once('finish', () => ctx.req.socket.end());
    end();
  });
  ctx.req.once('close', forget);
}

/** Query parameters of a route as a plain object; a repeated one is 400. */
export function singleQuery(ctx: Context): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [k, v] of new URLSearchParams(ctx.querystring)) {
    if (Object.hasOwn(out, k)) throw new AppError('INVALID_QUERY', `${k.slice(0, 40)} is given more than once`, { parameter: k.slice(0, 40) });
    out[k] = v;
  }
  return out;
}
