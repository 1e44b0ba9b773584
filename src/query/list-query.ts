import { badRequest } from '../errors/app-error.js';

/**
 * Collection queries shared by every listing (DESIGN.md section 6): offset,
 * limit (default 100, at most 500), sort=a,-b, and any other parameter as a
 * property filter (exact value, or /regex/ and /regex/i). Property paths are
 * validated here and reach SQL only as bound parameters.
 */
export interface SortKey {
  field: string;
  desc: boolean;
}

export interface Filter {
  field: string;
  /** Exact match, or a regular expression. */
  value: string;
  regex?: { flags: 'i' | '' };
}

export interface ListQuery {
  offset: number;
  limit: number;
  sort: SortKey[];
  filters: Filter[];
}

export type RawQuery = Record<string, string | string[] | undefined>;

const PATH = /^[A-Za-z_][A-Za-z0-9_-]{0,63}(\.[A-Za-z0-9_-]{1,64}){0,7}$/;
const REGEX = /^\/(.*)\/(i?)$/s;

export function single(query: RawQuery, key: string): string | undefined {
  const v = query[key];
  if (Array.isArray(v)) throw badRequest('INVALID_QUERY', `query parameter "${key}" is given more than once`, { parameter: key });
  return v;
}

export function intParam(query: RawQuery, key: string, def: number, min: number, max: number): number {
  const raw = single(query, key);
  if (raw === undefined) return def;
  if (!/^\d{1,9}$/.test(raw)) throw badRequest('INVALID_QUERY', `"${key}" must be a whole number`, { parameter: key, value: raw });
  const n = Number(raw);
  if (n < min || n > max) throw badRequest('INVALID_QUERY', `"${key}" must be between ${min} and ${max}`, { parameter: key, value: raw });
  return n;
}

export function validatePath(path: string, what = 'property'): string {
  if (!PATH.test(path)) throw badRequest('INVALID_PROPERTY', `"${path}" is not a valid ${what} path`, { property: path });
  return path;
}

export function parseListQuery(query: RawQuery, reserved: readonly string[], maxLimit = 500): ListQuery {
  const offset = intParam(query, 'offset', 0, 0, 1_000_000_000);
  const limit = intParam(query, 'limit', 100, 1, maxLimit);
  const sortRaw = single(query, 'sort');
  const sort: SortKey[] = [];
  if (sortRaw !== undefined && sortRaw !== '') {
    for (const part of sortRaw.split(',')) {
      const desc = part.startsWith('-');
      const field = validatePath(desc || part.startsWith('+') ? part.slice(1) : part, 'sort');
      sort.push({ field, desc });
    }
    if (sort.length > 8) throw badRequest('INVALID_QUERY', 'at most 8 sort keys');
  }
  const filters: Filter[] = [];
  for (const [key, raw] of Object.entries(query)) {
    if (raw === undefined || key === 'offset' || key === 'limit' || key === 'sort' || reserved.includes(key)) continue;
    const field = validatePath(key, 'filter');
    for (const value of Array.isArray(raw) ? raw : [raw]) {
      const m = REGEX.exec(value);
      if (m && value.length > 1) {
        const pattern = m[1]!;
        if (pattern.length > 512) throw badRequest('INVALID_FILTER', `the pattern for "${key}" is too long`, { property: key });
        try {
          new RegExp(pattern, m[2]);
        } catch {
          throw badRequest('INVALID_FILTER', `"${value}" is not a valid regular expression`, { property: key });
        }
        filters.push({ field, value: pattern, regex: { flags: m[2] === 'i' ? 'i' : '' } });
      } else {
        filters.push({ field, value });
      }
    }
  }
  if (filters.length > 16) throw badRequest('INVALID_QUERY', 'at most 16 filters');
  return { offset, limit, sort, filters };
}

/** How a listing's API field names map onto SQL. */
export interface FieldMap {
  /** API field -> SQL expression (trusted constants only). */
  columns: Record<string, string>;
  /** The jsonb column that holds free metadata. */
  metadata: string;
}

export interface SqlFragment {
  where: string[];
  orderBy: string;
  params: unknown[];
}

/**
 * Turns filters and sorts into SQL with bound parameters. Known fields use
 * their column; `metadata.a.b`, and any other name, read the metadata jsonb
 * through `#>>` with the path passed as a text[] parameter.
 */
export function toSql(q: Pick<ListQuery, 'filters' | 'sort'>, map: FieldMap, params: unknown[], tiebreak: string): SqlFragment {
  const where: string[] = [];
  const expr = (field: string): string => {
    const col = map.columns[field];
    if (col) return `(${col})::text`;
    const parts = field.startsWith('metadata.') ? field.slice('metadata.'.length).split('.') : field.split('.');
    params.push(parts);
    return `(${map.metadata} #>> $${params.length}::text[])`;
  };
  for (const f of q.filters) {
    const lhs = expr(f.field);
    params.push(f.value);
    where.push(f.regex ? `${lhs} ${f.regex.flags === 'i' ? '~*' : '~'} $${params.length}` : `${lhs} = $${params.length}`);
  }
  // Sorting reads metadata as jsonb (#>), so numbers order as numbers, not as text.
  const order = q.sort.map((s) => {
    let e = map.columns[s.field];
    if (!e) {
      const parts = s.field.startsWith('metadata.') ? s.field.slice('metadata.'.length).split('.') : s.field.split('.');
      params.push(parts);
      e = `(${map.metadata} #> $${params.length}::text[])`;
    }
    return `${e} ${s.desc ? 'DESC' : 'ASC'} NULLS LAST`;
  });
  order.push(tiebreak);
  return { where, orderBy: order.join(', '), params };
}
