import { AppError } from '../errors/app-error.js';
import { hasNul, nulRefused } from '../errors/input-errors.js';
import { allOf, text, type Expr, type ListQuery, type SortKey } from './tree.js';

/**
 * The workflow API's query string (DESIGN.md section 6) parsed into the query
 * tree (`tree.ts`): offset, limit (default 100, at most 500), sort=a,-b, and
 * any other parameter as a property filter: a plain value is an exact match
 * (text, or the declared type of the field; see `to-sql.ts`), `/regex/` or
 * `/regex/i` a regular expression; all filters must hold. Property paths are
 * validated here and reach SQL only as bound parameters.
 */

export type { ListQuery } from './tree.js';
export type RawQuery = Record<string, string | string[] | undefined>;

const PATH = /^[A-Za-z_][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9_-]{1,64}){0,7}$/;
const REGEX = /^\/(.*)\/(i?)$/s;

export function single(query: RawQuery, key: string): string | undefined {
  const v = Object.hasOwn(query, key) ? query[key] : undefined;
  if (Array.isArray(v)) throw new AppError('INVALID_QUERY', `query parameter "${key}" is given more than once`, { parameter: key });
  return v;
}

export function intParam(query: RawQuery, key: string, def: number, min: number, max: number): number {
  const raw = single(query, key);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new AppError('INVALID_QUERY', `"${key}" must be a whole number`, { parameter: key, value: raw.slice(0, 40) });
  // any run of digits is a whole number: one past the range says the range (Number() of a long run is only compared)
  const n = Number(raw);
  if (n < min || n > max) throw new AppError('INVALID_QUERY', `"${key}" must be between ${min} and ${max}`, { parameter: key, value: raw.slice(0, 40), min, max });
  return n;
}

/** A dotted property path (`name`, `metadata.a.b`), split into its segments. */
export function validatePath(path: string, what = 'property'): string[] {
  if (hasNul(path)) throw nulRefused(`the ${what} name`);
  if (!PATH.test(path)) throw new AppError('INVALID_PROPERTY', `"${path}" is not a valid ${what} path`, { property: path });
  return path.split('.');
}

/** One filter parameter value: `/pattern/flags` is a regular expression, anything else an exact value. */
function filterOf(key: string, path: string[], value: string): Expr {
  if (hasNul(value)) throw nulRefused(`the value of filter "${key}"`);
  const m = REGEX.exec(value);
  if (!m || value.length < 2) return { op: 'cmp', field: { path }, cmp: 'eq', value: text(value) };
  const pattern = m[1]!;
  if (pattern.length > 512) throw new AppError('INVALID_FILTER', `the pattern for "${key}" is too long`, { property: key });
  try {
    new RegExp(pattern, m[2]);
  } catch {
    throw new AppError('INVALID_FILTER', `"${value}" is not a valid regular expression`, { property: key });
  }
  // JavaScript accepting the pattern is not enough: PostgreSQL judges it when the listing runs (2201B -> 400).
  return { op: 'match', field: { path }, kind: 'regex', value: pattern, flags: m[2] === 'i' ? 'i' : '' };
}

/** Largest `offset` of a listing (deeper pages are refused with this limit named). */
export const MAX_OFFSET = 1_000_000_000;

export function parseListQuery(query: RawQuery, reserved: readonly string[], maxLimit = 500): ListQuery {
  const offset = intParam(query, 'offset', 0, 0, MAX_OFFSET);
  const limit = intParam(query, 'limit', 100, 1, maxLimit);
  const sortRaw = single(query, 'sort');
  const sort: SortKey[] = [];
  if (sortRaw !== undefined && sortRaw !== '') {
    for (const part of sortRaw.split(',')) {
      const desc = part.startsWith('-');
      sort.push({ field: { path: validatePath(desc || part.startsWith('+') ? part.slice(1) : part, 'sort') }, desc });
    }
    if (sort.length > 8) throw new AppError('INVALID_QUERY', 'at most 8 sort keys');
  }
  const filters: Expr[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (raw === undefined || key === 'offset' || key === 'limit' || key === 'sort' || reserved.includes(key)) continue;
    const path = validatePath(key, 'filter');
    for (const value of Array.isArray(raw) ? raw : [raw]) filters.push(filterOf(key, path, value));
  }
  if (filters.length > 16) throw new AppError('INVALID_QUERY', 'at most 16 filters');
  return { offset, limit, sort, filter: allOf(filters) };
}
