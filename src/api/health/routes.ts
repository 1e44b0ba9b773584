import Router from '@koa/router';
import { stateStore } from '../../connectors/lifecycle/state-store.js';
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
 * per change. An intake whose folder cannot be used (missing parent, not
 * writable) is named in `checks.intake` without changing readiness (the
 * service serves requests; the intake retries and its log says why).
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
  /** Intake services with folders they cannot use (as their runs last recorded it), with a plain reason each. */
  const intakeProblems = async (): Promise<Record<string, string>> => {
    const out: Record<string, string> = {};
    for (const { sid, connector } of s.registry.list()) {
      if (!connector.intake) continue;
      const bad = (await stateStore(s.db, sid).list('folder/', 100)).filter((e) => (e.value as { ok?: boolean }).ok === false);
      if (bad.length > 0) out[sid] = `${bad.length} folder(s) cannot be used; retrying (the worker's log says why)`;
    }
    return out;
  };
  router.get('/readyz', async (ctx) => {
    const database = await pingDb();
    const redis = s.queue.connected() ? 'ok' : 'not connected';
    const ready = database === 'ok' && !state.shuttingDown;
    const intake = database === 'ok' ? await withTimeout(intakeProblems(), PING_MS).catch(() => ({})) : {};
    ctx.status = ready ? 200 : 503;
    ctx.body = {
      status: ready ? 'ready' : 'not ready',
      checks: { database, redis, ...(Object.keys(intake).length > 0 ? { intake } : {}), ...(state.shuttingDown ? { shutdown: 'in progress' } : {}) },
    };
  });
  router.get('/metrics', async (ctx) => {
    ctx.type = s.metrics.registry.contentType;
    ctx.body = await s.metrics.registry.metrics();
  });
  return router;
}
