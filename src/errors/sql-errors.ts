import type { SqlError } from '../storage/driver/database.js';
import { AppError } from './app-error.js';

/** The SQLSTATEs the runtime can explain; anything else stays an internal error. */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const SERIALIZATION_FAILURE = '40001';
const DEADLOCK_DETECTED = '40P01';
const INVALID_REGULAR_EXPRESSION = '2201B';
const UNTRANSLATABLE_CHARACTER = '22P05';
const CHARACTER_NOT_IN_REPERTOIRE = '22021';
const QUERY_CANCELED = '57014';

/** Which constraint stands for which domain rule (index and constraint names from the migrations). */
const CONSTRAINT_RULES: ReadonlyMap<string, () => AppError> = new Map([
  ['entries_children', () => new AppError('NAME_EXISTS', 'an entry with this name already exists in the collection')],
  ['entries_fs_path', () => new AppError('NAME_EXISTS', 'an entry with this name already exists in the collection')],
  ['panels_holder_name', () => new AppError('NAME_EXISTS', 'you have a panel with this name already')],
  // the parent collection was deleted while an entry was being created or moved into it
  ['entries_parent_fkey', () => new AppError('ENTRY_NOT_FOUND', 'the collection no longer exists')],
]);

/**
 * Translates a PostgreSQL error (from either driver) into a domain error with
 * a stable code and a plain message, or undefined when it is not one the
 * runtime can explain. The one place SQL errors become domain errors: stores
 * and services call `throwSqlError` where a statement can fail for the
 * client's reasons, the command runner turns failures into results with it,
 * and the error middleware applies it to anything that got past them.
 * PostgreSQL's own text never reaches a body or a command result.
 */
export function translateSqlError(err: unknown): AppError | undefined {
  if (!(err instanceof Error)) return undefined;
  const { code, constraint } = err as SqlError;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return undefined;
  const rule = typeof constraint === 'string' ? CONSTRAINT_RULES.get(constraint) : undefined;
  switch (code) {
    case UNIQUE_VIOLATION:
      return rule?.() ?? new AppError('ALREADY_EXISTS', 'an object with this key already exists');
    case FOREIGN_KEY_VIOLATION:
      return rule?.() ?? new AppError('REFERENCE_GONE', 'an object this change refers to no longer exists');
    case SERIALIZATION_FAILURE:
    case DEADLOCK_DETECTED:
      return new AppError('TRY_AGAIN', 'a concurrent change got in the way; try again', undefined, { 'Retry-After': '1' });
    case INVALID_REGULAR_EXPRESSION:
      // valid in JavaScript, not in PostgreSQL's ARE dialect (`a{99999}`, `\1` without a group, `\k<name>`, `\p{L}`)
      return new AppError('INVALID_FILTER', 'a regular expression in the filter is not valid here (PostgreSQL regular expression syntax)');
    case UNTRANSLATABLE_CHARACTER:
    case CHARACTER_NOT_IN_REPERTOIRE:
      return new AppError('INVALID_CHARACTER', 'the text holds a character that cannot be stored (such as NUL)');
    case QUERY_CANCELED:
      return new AppError('TRY_AGAIN', 'the query took too long; try again', undefined, { 'Retry-After': '1' });
    default:
      return undefined;
  }
}

/** `.catch(throwSqlError)`: rethrows the domain error for an explainable SQL error, else the error itself. */
export function throwSqlError(err: unknown): never {
  throw translateSqlError(err) ?? err;
}
