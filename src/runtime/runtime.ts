import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AppConfig } from '../config/schema.js';
import { createApp, type AppState } from '../api/app.js';
import type { Logger } from '../logging/logger.js';
import { startWorkerSide } from '../worker/start-worker.js';
import { AREAS } from '../areas/index.js';
import type { Area } from '../areas/area.js';
import { LongLivedResponses } from '../api/long-lived.js';
import { buildServices, httpOrigin } from './build-services.js';
import type { Services } from './services.js';
import { StartError } from '../errors/start-error.js';
import { PrefixTakenError } from '../queue/job-queue.js';

export interface RuntimeParts {
  /** Serve the HTTP APIs. */
  api: boolean;
  /** Run queue workers, the reconciler and scheduled housekeeping. */
  workers: boolean;
  /** The areas to serve and run (default: all of `AREAS`; tests add their own). */
  areas?: readonly Area[];
}

export interface Runtime {
  services: Services;
  /** Base URL of the HTTP server (when `api`). */
  url?: string;
  /**
   * Resolves when the runtime had to stop on its own after it started (Redis
   * came up holding another deployment's queues under its prefix), once it
   * has stopped; the entrypoint then exits non-zero. Never resolves otherwise.
   */
  failed: Promise<Error>;
  stop(): Promise<void>;
}

function starting(_req: http.IncomingMessage, res: http.ServerResponse): void {
  res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', connection: 'close', 'x-content-type-options': 'nosniff' });
  res.end(JSON.stringify({ status: 503, code: 'STARTING', message: 'the service is starting; try again shortly' }));
}

/**
 * Headers must arrive within `headersTimeoutMs` (Node answers a bare 408 and
 * closes), checked often enough to hold that bound. Bodies are timed by
 * `api/middleware/body-timeout.ts`, which answers with an error body; Node's
 * whole-request limit is only the backstop behind it, a little later.
 */
function serverTimeouts(c: AppConfig['server']): http.ServerOptions {
  return {
    headersTimeout: c.headersTimeoutMs,
    requestTimeout: c.bodyTimeoutMs > 0 ? c.headersTimeoutMs + c.bodyTimeoutMs + 10_000 : 0,
    connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(c.headersTimeoutMs / 4))),
    keepAliveTimeout: 65_000,
  };
}

/** Why a listener cannot be had, said so that the operator knows what to change (one line, no stack). */
const LISTEN_ERRORS: Record<string, string> = {
  EADDRINUSE: 'the port is in use by another process; set PORT (server.port) to a free port, or stop that process',
  EACCES: 'this user may not listen on that port; set PORT (server.port) to a port above 1023',
  EADDRNOTAVAIL: 'this machine has no such address; set HOST (server.host) to one of its addresses, or 0.0.0.0',
};

function listen(server: http.Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      const why = LISTEN_ERRORS[err.code ?? ''];
      reject(why ? new StartError(`cannot listen on ${host.includes(':') ? `[${host}]` : host}:${port}: ${why}`) : err);
    });
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/**
 * Starts the parts of one process. The roles differ only in which parts they
 * wire; the services are the same. Stop order (SIGTERM): refuse new requests,
 * stop intake, drain workers, close queues, then the database.
 */
export async function startRuntime(config: AppConfig, parts: RuntimeParts, log: Logger): Promise<Runtime> {
  const state: AppState = { shuttingDown: false, longLived: new LongLivedResponses() };
  const areas = parts.areas ?? AREAS;
  let server: http.Server | undefined;
  let port = config.server.port;
  if (parts.api) {
    // Listen first: with port 0 the development issuer's URL needs the real port.
    server = http.createServer(serverTimeouts(config.server));
    // Until the services are up, every request gets a 503 (never a hanging socket).
    server.on('request', starting);
    port = await listen(server, config.server.port, config.server.host);
  }
  let services: Services;
  try {
    services = await buildServices(config, log, port);
  } catch (err) {
    server?.close();
    throw err;
  }
  const s = services;
  // Every role relays: an API alone still gets its jobs into the queues, and more
  // relays only share the rows (see relay.ts). Redis down does not block this.
  try {
    await s.relay.start();
    // every role publishes events (one at a time); an API reads the stream for its clients
    await s.eventPublisher.start();
    if (server) await s.events.start();
  } catch (err) {
    server?.close();
    await s.events.stop().catch(() => {});
    await s.eventPublisher.stop().catch(() => {});
    await s.queue.close().catch(() => {});
    await s.db.close().catch(() => {});
    throw err;
  }
  if (server) {
    server.off('request', starting);
    server.on('request', createApp(s, state, areas).callback());
    const origin = httpOrigin(config.server.host, port);
    log.info({ url: `${origin}/v1`, docs: `${origin}/docs` }, 'API listening');
  }
  const workerSide = parts.workers ? startWorkerSide(s, areas) : undefined;

  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      state.shuttingDown = true;
      log.info('shutting down');
      if (server) {
        // Requests in flight may finish (an upload loses nothing); after half the
        // shutdown budget the remaining connections (stalled clients) are cut.
        const closed = new Promise<void>((resolve) => server!.close(() => resolve()));
        server.closeIdleConnections();
        // a request still in flight answers with `Connection: close`, and a keep-alive socket that went
        // idle since is closed within a tenth of a second: nothing waits for keep-alive timeouts
        server.on('request', (_req: http.IncomingMessage, res: http.ServerResponse) => {
          if (!res.headersSent) res.setHeader('connection', 'close');
        });
        const idle = setInterval(() => server!.closeIdleConnections(), 100);
        // Streams never finish on their own: end them now instead of after the grace period.
        const streams = state.longLived.endAll();
        if (streams > 0) log.info({ streams }, 'ended long-lived responses');
        const grace = setTimeout(() => {
          log.warn('connections still open after the grace period; closing them');
          server!.closeAllConnections();
        }, config.server.shutdownTimeoutMs / 2);
        await closed;
        clearTimeout(grace);
        clearInterval(idle);
      }
      await workerSide?.stop();
      await s.events.stop();
      await s.eventPublisher.stop();
      await s.relay.stop();
      s.metrics.stop();
      await s.queue.close();
      await s.db.close();
      log.info('stopped');
    })();
    return stopping;
  };
  const failed = new Promise<Error>((resolve) => {
    s.queue.bound().catch((err: unknown) => {
      if (!(err instanceof PrefixTakenError) || stopping) return;
      log.fatal({ err }, 'stopping: the Redis prefix belongs to another deployment');
      void stop().finally(() => resolve(err));
    });
  });
  return { services: s, url: server ? httpOrigin(config.server.host, port) : undefined, failed, stop };
}
