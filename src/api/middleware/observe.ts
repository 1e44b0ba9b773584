import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import type { Logger } from '../../logging/logger.js';
import type { Metrics } from '../../metrics/metrics.js';

/**
 * Request id, one structured log line per request, and the duration histogram
 * labelled by route template (not the raw path, to keep label cardinality low).
 */
export function observe(log: Logger, metrics: Metrics): Middleware {
  return async (ctx, next) => {
    const start = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const id = /^[\w.-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    ctx.set('X-Request-Id', id);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      const route = (ctx as unknown as { routePath?: string; _matchedRoute?: string }).routePath
        ?? (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.httpDuration.observe({ method: ctx.method, route: String(route), status: String(ctx.status) }, seconds);
      const level = ctx.status >= 500 ? 'error' : 'info';
      log[level]({ req: id, method: ctx.method, route, path: ctx.path, status: ctx.status, ms: Math.round(seconds * 1e4) / 10 }, 'request');
    }
  };
}
