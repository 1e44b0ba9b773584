/**
 * Domain errors carry an HTTP status and a stable machine-readable code; the
 * error middleware is the only place that turns them into response bodies
 * (`{ status, code, message, details }`, DESIGN.md section 6).
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(400, code, message, details);
export const unauthorized = (message: string, error = 'invalid_token') =>
  new AppError(401, 'UNAUTHORIZED', message, undefined, {
    'WWW-Authenticate': `Bearer error="${error}", error_description="${message.replace(/["\\]/g, '')}"`,
  });
export const forbidden = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(403, code, message, details);
export const notFound = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(404, code, message, details);
export const methodNotAllowed = (code: string, message: string, allow?: string[]) =>
  new AppError(405, code, message, allow ? { allow } : undefined, allow ? { Allow: allow.join(', ') } : undefined);
export const notAcceptable = (code: string, message: string) => new AppError(406, code, message);
export const conflict = (code: string, message: string, details?: Record<string, unknown>) =>
  new AppError(409, code, message, details);
export const payloadTooLarge = (message: string) => new AppError(413, 'PAYLOAD_TOO_LARGE', message);
export const unsupportedMediaType = (message: string) => new AppError(415, 'UNSUPPORTED_MEDIA_TYPE', message);
export const unavailable = (code: string, message: string) => new AppError(503, code, message);
