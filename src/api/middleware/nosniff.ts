import type { Middleware } from 'koa';

/**
 * `X-Content-Type-Options: nosniff` on every response: stored content is served
 * with the type its uploader declared, and a browser must not sniff an HTML or
 * script payload out of a document declared as something else. Set before the
 * route runs, so error bodies carry it too.
 */
export function nosniff(): Middleware {
  return (ctx, next) => {
    ctx.set('X-Content-Type-Options', 'nosniff');
    return next();
  };
}
