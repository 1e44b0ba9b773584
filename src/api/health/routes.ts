import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';

const PING_MS = 2000;

class NoAnswer extends Error {}

const withTimeout = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new NoAnswer(`no answer within ${ms} ms`)), ms).unref())]);

/**
 * Liveness, readiness and Prometheus metrics.
 *
 * Readiness means "this process can serve requests": the database answers
 * (a ping bounded to 2 s) and the process is not stopping. Redis is not part
 * of it: no request waits on Redis (requests write rows, relays enqueue), so
 * a load balancer must keep sending traffic while it is down; its state is
 * in `checks.redis` (from the queue connection's state, never a round trip)
 * and in the `redis_connected` metric. The body is unauthenticated: a plain
 * reason only; the driver's error (addresses, users) goes to the log, once
 * per change.
 */
export function healthRoutes(s: Services, state: { shuttingDown: boolean }): Router {
  const router = new Router();
  const log = s.log.child({ component: 'health' });
  let lastDb = 'ok';
  const pingDb = async (): Promise<string> => {
    const db = await withTimeout(s.db.ping(), PING_MS).then(() => 'ok', (e: Error) => {
      const reason = e instanceof NoAnswer ? 'not answering' : 'unreachable';
      if (reason !== lastDb) log.warn({ err: e }, `readiness: database ${reason}`);
      return reason;
    });
    if (db === 'ok' && lastDb !== 'ok') log.info('readiness: database reachable again');
    lastDb = db;
    return db;
  };
  router.get('/healthz', (ctx) => {
    ctx.body = { status: 'ok' };
  });
  router.get('/readyz', async (ctx) => {
    const database = await pingDb();
    const redis = s.queue.connected() ? 'ok' : 'not connected';
    const ready = database === 'ok' && !state.shuttingDown;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not ready', checks: { database, redis, ...(state.shuttingDown ? { shutdown: 'in progress' } : {}) } };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = s.metrics.registry.contentType;
    ctx.body = await s.metrics.registry.metrics();
  });
  return router;
}
