import { AppError } from '../errors/app-error.js';
import { hasNul, nulRefused } from '../errors/input-errors.js';
import { resolveField, type FieldMap, type FieldType, type Resolved } from './fields.js';
import type { CmpOp, Expr, FieldRef, Sort, Value } from './tree.js';
import { parseBoolean, parseDate, parseNumber } from './values.js';

/** SQL pieces for a listing: WHERE conjuncts, the ORDER BY list, and the bound parameters they use. */
export interface SqlFragment {
  where: string[];
  orderBy: string;
  params: unknown[];
}

const OPS: Record<CmpOp, string> = { eq: '=', ne: 'IS DISTINCT FROM', lt: '<', le: '<=', gt: '>', ge: '>=' };
const CAST: Record<Exclude<FieldType, 'json'>, string> = { text: 'text', number: 'numeric', date: 'timestamptz', boolean: 'boolean' };
const MAX_DEPTH = 32;

/**
 * A jsonb string that is an ISO date or date-time, as timestamptz; NULL for
 * anything else. `.datetime()` in silent mode never raises (PostgreSQL 15 has
 * no pg_input_is_valid), and PostgreSQL 15 does not read a `Z` zone there.
 */
const jsonDate = (x: string) =>
  `CASE WHEN jsonb_typeof(${x}) = 'string' AND (${x} #>> '{}') ~ '^\\d{4}-\\d\\d-\\d\\d' THEN
    (jsonb_path_query_first(to_jsonb(regexp_replace(${x} #>> '{}', '[Zz]$', '+00:00')), '$.datetime()', '{}', true) #>> '{}')::timestamptz END`;

/** A jsonb value as `type`, NULL when the JSON value is of another type (a CASE, so no cast can fail). */
const jsonAs = (x: string, type: 'number' | 'boolean' | 'date'): string =>
  type === 'date' ? jsonDate(x) : `CASE WHEN jsonb_typeof(${x}) = '${type}' THEN (${x})::${CAST[type]} END`;

/** The value as text, for comparing with a field's text form. */
const asText = (v: Exclude<Value, { type: 'null' }>): string => (v.type === 'text' || v.type === 'date' ? v.value : String(v.value));

/**
 * Typed values from a parser are checked before they are bound: a date
 * PostgreSQL cannot read, or a number it would store as NaN/Infinity, is the
 * client's 400, not a SQL error.
 */
function checked(v: Value): Value {
  if (v.type === 'number' && !Number.isFinite(v.value)) throw new AppError('INVALID_FILTER', `${v.value} is not a finite number`);
  if (v.type === 'date' && parseDate(v.value) === undefined) throw new AppError('INVALID_FILTER', `"${v.value.slice(0, 80)}" is not an ISO 8601 date`);
  return v;
}

/** Reads a plain text value as the column's type; undefined when it does not parse. */
function coerce(text: string, type: 'number' | 'date' | 'boolean'): Value | undefined {
  if (type === 'number') {
    const n = parseNumber(text);
    return n === undefined ? undefined : { type, value: n };
  }
  if (type === 'boolean') {
    const b = parseBoolean(text);
    return b === undefined ? undefined : { type, value: b };
  }
  const d = parseDate(text);
  return d === undefined ? undefined : { type, value: d };
}

/**
 * Turns a filter/sort tree into parameterized SQL. Field names reach SQL only
 * through the field map's trusted expressions; every value and every jsonb
 * path is a bound parameter.
 *
 * Comparisons are typed. A column compares as its declared type; a plain text
 * value on a typed column is read as that type when it parses, else the
 * column's text form is compared (so `?size=abc` matches nothing instead of
 * failing). A jsonb path compares by the value's type: text with the JSON
 * value's text form (`#>>`), numbers with JSON numbers, booleans with JSON
 * booleans, dates with JSON strings that are ISO dates (as timestamptz); a JSON
 * value of another type never matches. `ne` is "not equal", so absent values
 * are included; `not` likewise treats an unknown (NULL) result as false.
 */
export class SqlTranslator {
  /** One-time checks ANDed to the statement (see `match`). */
  private readonly guards: string[] = [];

  constructor(private readonly map: FieldMap, private readonly params: unknown[]) {}

  private bind(value: unknown): string {
    if (typeof value === 'string' && hasNul(value)) throw nulRefused('a filter value');
    this.params.push(value);
    return `$${this.params.length}`;
  }

  private resolve(ref: FieldRef): { r: Resolved; text: string; json?: string } {
    for (const seg of ref.path) if (hasNul(seg)) throw nulRefused('a property name');
    const r = resolveField(this.map, ref);
    if (r.kind === 'column') return { r, text: `(${r.sql})::text` };
    const p = this.bind(r.path);
    return { r, text: `(${r.sql} #>> ${p}::text[])`, json: `(${r.sql} #> ${p}::text[])` };
  }

  expr(e: Expr, depth = 0): string {
    if (depth > MAX_DEPTH) throw new AppError('INVALID_FILTER', `filters nest at most ${MAX_DEPTH} levels deep`);
    switch (e.op) {
      case 'and':
      case 'or':
        if (e.args.length === 0) return e.op === 'and' ? 'TRUE' : 'FALSE';
        return `(${e.args.map((a) => this.expr(a, depth + 1)).join(e.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT COALESCE(${this.expr(e.arg, depth + 1)}, FALSE))`;
      case 'cmp':
        return this.cmp(e.field, e.cmp, e.value);
      case 'match':
        return this.match(e.field, e.kind, e.value, e.flags);
    }
  }

  private cmp(ref: FieldRef, op: CmpOp, raw: Value): string {
    const value = checked(raw);
    const f = this.resolve(ref);
    if (value.type === 'null') {
      if (op !== 'eq' && op !== 'ne') throw new AppError('INVALID_FILTER', `null can only be compared with eq or ne`);
      const isNull = f.json ? `(${f.json} IS NULL OR jsonb_typeof(${f.json}) = 'null')` : `(${f.r.sql}) IS NULL`;
      return op === 'eq' ? isNull : `(NOT ${isNull})`;
    }
    const sqlOp = OPS[op];
    if (f.json) {
      if (value.type === 'text') return `(${f.text} ${sqlOp} ${this.bind(value.value)}::text)`;
      return `(${jsonAs(f.json, value.type)} ${sqlOp} ${this.bind(value.value)}::${CAST[value.type]})`;
    }
    const col = f.r as Extract<Resolved, { kind: 'column' }>;
    if (col.type === 'text' || value.type === col.type) {
      const v = col.type === 'text' ? asText(value) : value.value;
      return `(${col.type === 'text' ? f.text : `(${col.sql})`} ${sqlOp} ${this.bind(v)}::${CAST[col.type]})`;
    }
    if (value.type === 'text') {
      const typed = coerce(value.value, col.type);
      if (typed) return `((${col.sql}) ${sqlOp} ${this.bind(typed.value)}::${CAST[col.type]})`;
      return `(${f.text} ${sqlOp} ${this.bind(value.value)}::text)`;
    }
    const name = ref.path.join('.');
    throw new AppError('INVALID_FILTER', `"${name}" is a ${col.type}; it cannot be compared with a ${value.type}`, { property: name });
  }

  private match(ref: FieldRef, kind: 'regex' | 'startswith' | 'endswith' | 'contains', value: string, flags: '' | 'i'): string {
    const f = this.resolve(ref);
    if (kind === 'regex') {
      const p = this.bind(value);
      // PostgreSQL compiles a pattern only when a row reaches it, so an invalid one
      // would pass unnoticed on an empty listing; this pseudo-constant check runs
      // once per statement and fails it (2201B) whatever the rows.
      this.guards.push(`(('' ~ ${p}) IS NOT NULL)`);
      return `(${f.text} ${flags === 'i' ? '~*' : '~'} ${p})`;
    }
    const escaped = value.replace(/[\\%_]/g, '\\$&');
    const pattern = kind === 'startswith' ? `${escaped}%` : kind === 'endswith' ? `%${escaped}` : `%${escaped}%`;
    return `(${f.text} ${flags === 'i' ? 'ILIKE' : 'LIKE'} ${this.bind(pattern)} ESCAPE '\\')`;
  }

  /** Sorting reads jsonb paths as jsonb (`#>`), so numbers order as numbers, not as text. */
  private orderKey(ref: FieldRef): { sql: string; notNull: boolean } {
    const f = this.resolve(ref);
    return { sql: f.json ?? `(${f.r.sql})`, notNull: f.r.kind === 'column' && f.r.notNull === true };
  }

  translate(q: { filter?: Expr; sort: Sort }, tiebreak: string): SqlFragment {
    const where = q.filter ? [this.expr(q.filter)] : [];
    const order = q.sort.map((s) => {
      const k = this.orderKey(s.field);
      return `${k.sql} ${s.desc ? 'DESC' : 'ASC'}${k.notNull ? '' : ' NULLS LAST'}`;
    });
    order.push(tiebreak);
    return { where: [...where, ...this.guards], orderBy: order.join(', '), params: this.params };
  }
}

/**
 * The filter and sort of a listing as SQL. `params` may already hold the
 * caller's own parameters; new ones are appended and numbered after them.
 */
export function toSql(q: { filter?: Expr; sort: Sort }, map: FieldMap, params: unknown[], tiebreak: string): SqlFragment {
  return new SqlTranslator(map, params).translate(q, tiebreak);
}
