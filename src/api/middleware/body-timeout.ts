import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { Context, Middleware } from 'koa';
import { AppError } from '../../errors/app-error.js';

/*
 * Request bodies that stall. Checks, per request:
 * - idle: at most `idleMs` between two chunks of the body while we are ready to
 *   take more (time the consumer spends on a full buffer is ours, not the client's);
 * - total: the whole body within `totalMs` of the first read (a slowloris sending
 *   a byte every few seconds never goes idle); 0 = no limit.
 * On expiry the reader gets `408 REQUEST_TIMEOUT` (written with `Connection: close`
 * when an answer can still be written), or the connection is cut when the
 * response has already gone. A body left unread by its route (an error answered
 * first) is discarded under the same limits instead of holding the socket.
 */

/** Limits for request bodies (`server.bodyIdleTimeoutMs`, `server.bodyTimeoutMs`). */
export interface BodyTimeouts {
  idleMs: number;
  totalMs: number;
}

const watches = new WeakMap<IncomingMessage, BodyWatch>();

class BodyWatch {
  private sink: PassThrough | undefined;
  private started = false;
  private idle: NodeJS.Timeout | undefined;
  private total: NodeJS.Timeout | undefined;
  /** The 408 once a limit ran out. */
  expired: AppError | undefined;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly limits: BodyTimeouts,
  ) {}

  /** The body as a stream under the limits (one per request). */
  body(): Readable {
    if (this.sink || this.started) throw new Error('the request body was already read');
    const sink = new PassThrough({ highWaterMark: 64 * 1024 });
    // Its reader sees errors; a route that failed before reading must not crash the process.
    sink.on('error', () => {});
    this.sink = sink;
    this.start();
    return sink;
  }

  /** After the response: read and drop what the route left unread, still under the limits. */
  discardRest(): void {
    if (this.req.complete || this.req.destroyed || this.expired) return;
    this.sink?.destroy();
    this.sink = undefined;
    this.start();
    this.arm();
    this.req.resume();
  }

  private start(): void {
    if (this.started) return;
    this.started = true;
    const { req } = this;
    if (this.limits.totalMs > 0) {
      this.total = setTimeout(() => this.expire(`the request body did not arrive within ${this.limits.totalMs} ms`), this.limits.totalMs).unref();
    }
    req.on('data', (chunk: Buffer) => {
      this.arm();
      const sink = this.sink;
      if (sink && !sink.write(chunk)) {
        // the reader is busy: pause the client and stop its idle clock until the buffer drains
        clearTimeout(this.idle);
        req.pause();
        sink.once('drain', () => {
          if (this.sink !== sink || this.expired) return;
          this.arm();
          req.resume();
        });
      }
    });
    req.on('end', () => {
      this.stop();
      this.sink?.end();
    });
    req.on('error', (err) => {
      this.stop();
      this.sink?.destroy(err);
    });
    req.on('close', () => {
      this.stop();
      if (!req.complete) this.sink?.destroy(Object.assign(new Error('the client closed the connection mid-body'), { code: 'ECONNRESET' }));
    });
    this.arm();
  }

  private arm(): void {
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.expire(`no request body data arrived for ${this.limits.idleMs} ms`), this.limits.idleMs).unref();
  }

  private stop(): void {
    clearTimeout(this.idle);
    clearTimeout(this.total);
  }

  private expire(message: string): void {
    if (this.expired || this.req.complete) return;
    this.stop();
    this.expired = new AppError('REQUEST_TIMEOUT', message, undefined, { Connection: 'close' });
    this.req.pause();
    if (this.res.headersSent) {
      this.req.socket.destroy(); // nothing more can be said on this connection
    } else {
      // the 408 is the last answer on this connection: Node closes it once written
      this.res.setHeader('Connection', 'close');
    }
    this.sink?.destroy(this.expired);
  }
}

/** Installs the limits for every request; routes read bodies through `requestBody`. */
/** Whether the request can carry a body at all (HTTP/1.1: a length other than 0, or chunked). */
const mayHaveBody = (req: IncomingMessage): boolean =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');

export function bodyTimeouts(limits: BodyTimeouts): Middleware {
  return async (ctx, next) => {
    // Nothing can stall without a body: most requests (GET listings, polling) pay nothing here.
    if (!mayHaveBody(ctx.req)) return next();
    const watch = new BodyWatch(ctx.req, ctx.res, limits);
    watches.set(ctx.req, watch);
    ctx.res.once('finish', () => watch.discardRest());
    await next();
  };
}

function watchOf(ctx: Context): BodyWatch {
  const watch = watches.get(ctx.req);
  if (!watch) throw new Error('bodyTimeouts middleware is not installed');
  return watch;
}

/** The request body, guarded by the idle and total limits. Use instead of `ctx.req`. */
export function requestBody(ctx: Context): Readable {
  // a request without a body has already ended: there is nothing to watch
  if (!mayHaveBody(ctx.req)) return ctx.req;
  return watchOf(ctx).body();
}

/** The 408 when this request's body ran out of time (the reader may report it as another error). */
export function bodyTimeoutError(ctx: Context): AppError | undefined {
  return watches.get(ctx.req)?.expired;
}
