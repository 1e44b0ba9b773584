import { AppError } from './app-error.js';

/** Errors of a connection to PostgreSQL that went away or cannot be made (node's and libpq's codes, SQLSTATE class 08, server shutdown). */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '57P01', '57P02', '57P03', '53300']);
const CONNECTION_MESSAGES = /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error)/;
/** A disk with no room left (or over quota). */
const STORAGE_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** The error and its causes, outermost first (bounded). */
function chain(err: unknown): Error[] {
  const out: Error[] = [];
  for (let e = err; e instanceof Error && out.length < 8; e = e.cause) out.push(e);
  return out;
}

/** Whether `err` (or one of its causes) says the database cannot be reached: its connection went away or cannot be made. */
export function isDatabaseUnreachable(err: unknown): boolean {
  return chain(err).some(connectionLost);
}

function connectionLost(e: Error): boolean {
  const code = (e as NodeJS.ErrnoException).code;
  return (typeof code === 'string' && (CONNECTION_CODES.has(code) || code.startsWith('08'))) || CONNECTION_MESSAGES.test(e.message);
}

/**
 * Translates a failure of a resource the server depends on into an answer a
 * client can act on: the database unreachable (503 `DATABASE_UNAVAILABLE`,
 * `Retry-After`) or the disk full (507 `STORAGE_FULL`), or undefined. The
 * error middleware applies it to whatever got past the services; a request
 * never talks to any other network peer in-line (imports and deliveries run
 * in jobs with their own error reports), so a connection error here is the
 * database's.
 */
export function translateResourceError(err: unknown): AppError | undefined {
  for (const e of chain(err)) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && STORAGE_CODES.has(code)) {
      return new AppError('STORAGE_FULL', 'the server has no storage left for this; try again once an operator has made room', undefined, { 'Retry-After': '60' });
    }
    if (connectionLost(e)) {
      return new AppError('DATABASE_UNAVAILABLE', 'the database cannot be reached right now; try again shortly', undefined, { 'Retry-After': '5' });
    }
  }
  return undefined;
}
