import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref())]);

/**
 * Liveness, readiness and Prometheus metrics. Neither readiness nor metrics
 * waits on Redis: readiness reads the queue's connection state (kept by a
 * connection that reconnects on its own), metrics read the last background
 * sample of the queue depths. The database ping is bounded.
 */
export function healthRoutes(s: Services, state: { shuttingDown: boolean }): Router {
  const router = new Router();
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const [db, redis] = await Promise.all([
      withTimeout(s.db.ping(), 2000).then(() => 'ok', (e: Error) => e.message),
      s.queue.connected() ? 'ok' : 'not connected',
    ]);
    const ready = db === 'ok' && redis === 'ok' && !state.shuttingDown;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not ready', checks: { database: db, redis, ...(state.shuttingDown ? { shutdown: 'in progress' } : {}) } };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = s.metrics.registry.contentType;
    ctx.body = await s.metrics.registry.metrics();
  });
  return router;
}
