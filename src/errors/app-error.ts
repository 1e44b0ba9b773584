import { PRINT_STATUSES } from './print-statuses.js';
import { WORKFLOW_STATUSES } from './workflow-statuses.js';

/** Every code a domain error may carry: the keys of the workflow API's table. */
export type ErrorCode = keyof typeof WORKFLOW_STATUSES;

/** Which API answers: `/v1` is the workflow API, `/` and `/v3` the print API. */
export type Api = 'workflow' | 'print';

/**
 * A domain error: a stable machine-readable code, a plain message and
 * optional details. It carries no HTTP status: one table per API maps codes
 * to statuses (`workflow-statuses.ts`, `print-statuses.ts`), and the error
 * middleware is the only place that writes error bodies
 * (`{ status, code, message, details }`, DESIGN.md section 6). A command or
 * a connector stores `{ code, message }` the same way.
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  /** The status in the workflow API (the print API's may differ: use `statusOf(err, 'print')`). */
  get status(): number {
    return statusOf(this);
  }
}

/** The HTTP status of a domain error in an API: the print API's own entry, else the workflow API's. */
export function statusOf(err: AppError, api: Api = 'workflow'): number {
  if (api === 'print' && Object.hasOwn(PRINT_STATUSES, err.code)) return PRINT_STATUSES[err.code]!;
  // a code missing from the table cannot compile; one made up at run time is a server fault
  return Object.hasOwn(WORKFLOW_STATUSES, err.code) ? WORKFLOW_STATUSES[err.code] : 500;
}

/** 401 with the `WWW-Authenticate` challenge RFC 6750 asks for. */
export const unauthorized = (message: string, error = 'invalid_token') =>
  new AppError('UNAUTHORIZED', message, undefined, {
    'WWW-Authenticate': `Bearer error="${error}", error_description="${message.replace(/["\\]/g, '')}"`,
  });

/** A 405-class code, with the `Allow` header when the allowed methods are known. */
export const methodNotAllowed = (code: ErrorCode, message: string, allow?: string[]) =>
  new AppError(code, message, allow ? { allow } : undefined, allow ? { Allow: allow.join(', ') } : undefined);
