import type { Middleware } from 'koa';
import { AppError, statusOf, type Api } from '../../errors/app-error.js';
import { translateResourceError } from '../../errors/resource-errors.js';
import { translateSqlError } from '../../errors/sql-errors.js';
import type { Logger } from '../../logging/logger.js';
import { bodyTimeoutError } from './body-timeout.js';

export interface ErrorBody {
  status: number;
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

/** Errors from libraries that carry an HTTP status (raw-body, http-errors). */
function httpStatusOf(err: unknown): { status: number; code: string; message: string } | undefined {
  const e = err as { status?: unknown; statusCode?: unknown; type?: unknown; expose?: unknown; message?: string };
  const status = typeof e.status === 'number' ? e.status : typeof e.statusCode === 'number' ? e.statusCode : undefined;
  if (!status || status < 400 || status > 499) return undefined;
  const byType: Record<string, string> = {
    'entity.too.large': 'PAYLOAD_TOO_LARGE', 'request.aborted': 'REQUEST_ABORTED', 'encoding.unsupported': 'UNSUPPORTED_ENCODING',
    'request.size.invalid': 'INVALID_CONTENT_LENGTH', 'charset.unsupported': 'UNSUPPORTED_CHARSET',
  };
  const code = (typeof e.type === 'string' && Object.hasOwn(byType, e.type) && byType[e.type]) || `HTTP_${status}`;
  return { status, code, message: e.expose === false ? 'bad request' : (e.message ?? 'bad request') };
}

/**
 * The one place that writes error bodies (DESIGN.md section 6) for both APIs:
 * `{ status, code, message, details }`. Unknown errors become a 500 without
 * internals; the stack goes to the log only.
 */
/** `/` and `/v3` belong to the print API; everything else answers with the workflow API's table. */
const apiOf = (path: string): Api => (path === '/' || path === '/v3' || path.startsWith('/v3/') ? 'print' : 'workflow');

export function errorHandler(log: Logger): Middleware {
  return async (ctx, next) => {
    try {
      await next();
    } catch (caught) {
      // a body that ran out of time is a 408, whatever error its reader made of the cut stream;
      // SQL errors that got past the stores become domain errors here (their text never reaches a body)
      const timedOut = bodyTimeoutError(ctx);
      const err = timedOut ?? translateSqlError(caught) ?? translateResourceError(caught) ?? caught;
      if (!timedOut && err !== caught && statusOf(err as AppError) < 500) log.info({ err: caught, path: ctx.path }, 'the database refused the change');
      let body: ErrorBody;
      if (err instanceof AppError) {
        const status = statusOf(err, apiOf(ctx.path));
        body = { status, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) };
        for (const [k, v] of Object.entries(err.headers ?? {})) ctx.set(k, v);
        if (status >= 500) log.error({ err, path: ctx.path }, 'request failed');
      } else {
        const known = httpStatusOf(err);
        if (known) {
          body = known;
        } else if (ctx.req.readableAborted || (ctx.req.destroyed && !ctx.req.complete)) {
          // the client went away mid-request: nobody to answer, nothing broken here
          log.info({ method: ctx.method, path: ctx.path, err: (err as Error).message }, 'client aborted the request');
          body = { status: 400, code: 'REQUEST_ABORTED', message: 'the request body ended early' };
        } else {
          log.error({ err, method: ctx.method, path: ctx.path }, 'unhandled error');
          body = { status: 500, code: 'INTERNAL_ERROR', message: 'internal error; see the server log' };
        }
      }
      ctx.status = body.status;
      ctx.body = body;
      ctx.type = 'application/json';
    }
  };
}
