import { isSqlError } from '../storage/driver/database.js';
import { badRequest } from './app-error.js';

const INVALID_REGULAR_EXPRESSION = '2201B';

/**
 * SQL errors a listing query can raise because of what the client asked for.
 * A regular expression valid in JavaScript may not be in PostgreSQL's ARE
 * dialect (`a{99999}`, `\1` without a group, `\k<name>`, `\p{L}`): PostgreSQL
 * is the judge, and its verdict is the client's 400, not a 500.
 */
export function translateQueryError(err: unknown): never {
  if (isSqlError(err, INVALID_REGULAR_EXPRESSION)) {
    throw badRequest('INVALID_FILTER', `a regular expression in the filter is not valid here: ${(err as Error).message}`);
  }
  throw err;
}
