import odataParser from '@balena/odata-parser';
import { AppError } from '../errors/app-error.js';
import { hasNul, nulRefused } from '../errors/input-errors.js';
import { fieldMap, type FieldDef, type FieldMap, type FieldType } from './fields.js';
import type { CmpOp, Expr, FieldRef, Sort, Value } from './tree.js';
import { parseDate } from './values.js';

/**
 * The print API's OData query options (`$filter`, `$orderby`, `$top`, `$skip`,
 * `$select`, `$inlinecount`) parsed with `@balena/odata-parser` (maintained,
 * reads OData v4 and the v2 forms the print API's clients send:
 * `substringof`, `datetime'…'`, `$inlinecount`), and its syntax tree
 * translated into the typed tree of `tree.ts`; `to-sql.ts` alone makes SQL
 * of it. Field names are checked against the listing's field table; values are
 * typed binds, never text pasted into SQL.
 */

/** One field of an OData listing: its API name, its SQL, and what a UI may do with it. */
export interface ODataField extends FieldDef {
  name: string;
  filterable: boolean;
  sortable: boolean;
  description: string;
  /** For a json field: the documented inner properties (`checkin/type`). */
  properties?: readonly string[];
}

/** A listing's fields: the field map the translator reads, and the metadata a UI builds its table from. */
export interface ODataFields {
  map: FieldMap;
  fields: readonly ODataField[];
  names: ReadonlySet<string>;
}

export function odataFields(fields: readonly ODataField[]): ODataFields {
  const filterable = Object.fromEntries(fields.filter((f) => f.filterable || f.sortable).map((f) => [f.name, { sql: f.sql, type: f.type, notNull: f.notNull }]));
  return { map: fieldMap(filterable), fields, names: new Set(fields.map((f) => f.name)) };
}

/** The metadata routes' body: each field, its type, whether it filters and sorts. */
export function fieldMetadata(f: ODataFields) {
  return {
    fields: f.fields.map((x) => ({
      name: x.name, type: x.type, filterable: x.filterable, sortable: x.sortable, description: x.description,
      ...(x.properties ? { properties: [...x.properties] } : {}),
    })),
    query: { parameters: [...PARAMETERS], defaultTop: DEFAULT_TOP, maxTop: MAX_TOP, operators: OPERATORS },
  };
}

export interface ODataQuery {
  filter?: Expr;
  sort: Sort;
  top: number;
  skip: number;
  /** Top-level fields to answer with; undefined = all. */
  select?: string[];
  /** `$inlinecount=allpages`: answer `{ results, totalCount }`. */
  inlineCount: boolean;
}

const PARAMETERS = ['$filter', '$orderby', '$top', '$skip', '$select', '$inlinecount'] as const;
export const DEFAULT_TOP = 100;
export const MAX_TOP = 1000;
const MAX_SKIP = 10_000_000;
const MAX_QUERY = 8192;
const OPERATORS = ['eq', 'ne', 'gt', 'ge', 'lt', 'le', 'and', 'or', 'not', 'in', 'startswith', 'endswith', 'contains', 'substringof', 'tolower', 'toupper'];
const MATCH_METHODS: ReadonlySet<string> = new Set(['startswith', 'endswith', 'contains', 'substringof']);
const PROPERTY_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const CMP: ReadonlySet<string> = new Set(['eq', 'ne', 'gt', 'ge', 'lt', 'le']);
const FLIP: Record<CmpOp, CmpOp> = { eq: 'eq', ne: 'ne', gt: 'lt', ge: 'le', lt: 'gt', le: 'ge' };

// a CommonJS module: Node's ESM loader offers only its default export (named imports fail once compiled)
const parseODataOptions = odataParser.parse;

const invalid = (message: string, details?: Record<string, unknown>) => new AppError('INVALID_FILTER', message, details);

/**
 * Parses the OData options of a query string (`ctx.querystring`, still
 * encoded). Parameters not starting with `$` are left to the caller. Unknown
 * `$` options, repeated options, options that do not parse, unknown fields
 * and values of the wrong type: 400 naming the problem.
 */
export function parseODataQuery(querystring: string, fields: ODataFields): ODataQuery {
  if (querystring.length > MAX_QUERY) throw new AppError('INVALID_QUERY', `the query string is longer than ${MAX_QUERY} characters`);
  const params = new URLSearchParams(querystring);
  const seen = new Map<string, string>();
  for (const [key, value] of params) {
    if (!key.startsWith('$')) continue;
    if (!(PARAMETERS as readonly string[]).includes(key)) {
      throw new AppError('INVALID_QUERY', `unknown query option ${key.slice(0, 40)}; allowed: ${PARAMETERS.join(', ')}`, { parameter: key.slice(0, 40) });
    }
    if (seen.has(key)) throw new AppError('INVALID_QUERY', `${key} is given more than once`, { parameter: key });
    if (hasNul(value)) throw nulRefused(key);
    seen.set(key, value);
  }
  if (seen.size === 0) return { sort: [], top: DEFAULT_TOP, skip: 0, inlineCount: false };
  // The decoded values, re-encoded only where the parser decodes: '%' (text literals are
  // percent-decoded) and '&' (the option separator). Clients encode differently
  // (`%2F`, `%27`, `+`); decoding first makes them all read alike.
  const text = [...seen].map(([k, v]) => `${k}=${v.replace(/%/g, '%25').replace(/&/g, '%26')}`).join('&');
  // A listing polled with the same options parses them once (the parse was ~7 % of a
  // listing request's CPU: docs/design/queries.md, "Parsed options kept per process"). Only the parsed options are kept, never
  // results; bounded, and only queries that parsed.
  let known = parsedQueries.get(fields);
  if (!known) parsedQueries.set(fields, (known = new Map()));
  const hit = known.get(text);
  if (hit) return hit;
  const q = parseOptions(text, seen, fields);
  if (known.size >= PARSED_MAX) known.clear();
  known.set(text, q);
  return q;
}

/** Parsed queries by their normalised option text, per field set (parseODataQuery); treat them as read-only. */
const parsedQueries = new WeakMap<ODataFields, Map<string, ODataQuery>>();
const PARSED_MAX = 500;

function parseOptions(text: string, seen: Map<string, string>, fields: ODataFields): ODataQuery {
  let tree: Record<string, unknown>;
  let binds: [string, unknown][];
  try {
    ({ tree, binds } = parseODataOptions(text, { startRule: 'ProcessRule', rule: 'QueryOptions' }) as { tree: Record<string, unknown>; binds: [string, unknown][] });
  } catch (err) {
    throw syntaxError(err, text);
  }
  // the parser reads datetime'2024-02-30' as 1 March: the literal's own text is checked first
  const filterText = seen.get('$filter');
  if (filterText !== undefined) checkDateLiterals(filterText);
  const t = new TreeReader(fields, binds);
  const q: ODataQuery = { sort: [], top: DEFAULT_TOP, skip: 0, inlineCount: false };
  if (tree.$filter !== undefined) q.filter = t.expr(tree.$filter, 0);
  if (tree.$orderby !== undefined) q.sort = t.orderBy(tree.$orderby, seen.get('$orderby') ?? '');
  if (tree.$top !== undefined) q.top = t.integer(tree.$top, '$top', MAX_TOP);
  if (tree.$skip !== undefined) q.skip = t.integer(tree.$skip, '$skip', MAX_SKIP);
  if (tree.$select !== undefined) q.select = t.select(tree.$select);
  if (tree.$inlinecount !== undefined) {
    if (tree.$inlinecount !== 'allpages' && tree.$inlinecount !== 'none') throw new AppError('INVALID_QUERY', '$inlinecount is allpages or none');
    q.inlineCount = tree.$inlinecount === 'allpages';
  }
  return Object.freeze(q);
}

// a datetime'…' or date'…' literal, or a text literal ('it''s') to step over
const DATE_OR_TEXT = /(?<![A-Za-z0-9_])(date(?:time)?)'([^']*)'|'(?:[^']|'')*'/gi;

/** 400 for a `datetime'…'` or `date'…'` literal that is no calendar date (`2024-02-30`), which the parser would roll over. */
function checkDateLiterals(filter: string): void {
  for (const m of filter.matchAll(DATE_OR_TEXT)) {
    if (m[1] === undefined) continue;
    if (parseDate(m[2]!) === undefined) throw invalid(`${m[1]}'${m[2]!.slice(0, 60)}' is not a valid ISO 8601 date`, { value: m[2]!.slice(0, 60) });
  }
}

function syntaxError(err: unknown, text: string): AppError {
  const e = err as { message?: string; location?: { start?: { offset?: number } } };
  const at = e.location?.start?.offset;
  // name the option the parser stopped in, and where in it
  const head = at === undefined ? '' : text.slice(0, at);
  const start = Math.max(head.lastIndexOf('&$') + 1, head.startsWith('$') ? 0 : -1);
  const option = at === undefined || start < 0 ? undefined : head.slice(start).match(/^(\$[a-z]+)=/)?.[1];
  const found = (e.message ?? '').match(/but (.*) found\.?$/)?.[1];
  const where = option ? ` in ${option} at character ${at! - start - option.length}` : '';
  return new AppError('INVALID_FILTER', `the query does not parse${where}: unexpected ${found ?? 'input'}`, option ? { option } : undefined);
}

type Node = unknown;

/** Reads the parser's tree (arrays `[op, ...]`, `{ name, property }` paths, `{ bind: i }` values). */
class TreeReader {
  constructor(private readonly fields: ODataFields, private readonly binds: [string, unknown][]) {}

  expr(n: Node, depth: number): Expr {
    if (depth > 32) throw invalid('the filter nests more than 32 levels deep');
    if (!Array.isArray(n)) {
      if (isPath(n) && (n as { lambda?: unknown }).lambda) throw invalid('lambda operators (any, all) are not supported');
      // a bare boolean property: `enabled`
      if (isPath(n)) return { op: 'cmp', field: this.field(n), cmp: 'eq', value: { type: 'boolean', value: true } };
      throw invalid('the filter is not a condition');
    }
    const [op, ...args] = n as [string, ...Node[]];
    if (op === 'and' || op === 'or') return { op, args: args.map((a) => this.expr(a, depth + 1)) };
    if (op === 'not') return { op: 'not', arg: this.expr(args[0], depth + 1) };
    if (op === 'call') return this.call(args[0] as Call, depth);
    if (op === 'eqany') {
      const field = this.field(args[0]);
      const list = this.value(args[1]);
      if (list.type !== 'list') throw invalid('in takes a list of values');
      // each value of the list has the column's type, as in a comparison (`id in (1,'a')` is 400)
      return { op: 'or', args: list.values.map((value) => ({ op: 'cmp', field, cmp: 'eq', value: this.typed(field, value) })) };
    }
    if (CMP.has(op)) return this.cmp(op as CmpOp, args[0], args[1], depth);
    throw invalid(`the operator ${String(op).slice(0, 20)} is not supported; supported: ${OPERATORS.join(', ')}`, { operator: String(op).slice(0, 20) });
  }

  private cmp(op: CmpOp, lhs: Node, rhs: Node, depth: number): Expr {
    for (const side of [lhs, rhs]) {
      if (Array.isArray(side) && side[0] !== 'call') throw invalid(`the operator ${String(side[0]).slice(0, 20)} is not supported; supported: ${OPERATORS.join(', ')}`, { operator: String(side[0]).slice(0, 20) });
    }
    // `substringof('x', name) eq true`, the OData v2 way of writing a match
    if (isCall(lhs) || isCall(rhs)) {
      const [call, other] = isCall(lhs) ? [lhs, rhs] : [rhs, lhs];
      const m = this.call((call as [string, Call])[1], depth);
      const v = isPath(other) ? undefined : this.value(other);
      if (v?.type !== 'boolean' || (op !== 'eq' && op !== 'ne')) throw invalid(`${(call as [string, Call])[1].method} can only be compared with true or false (eq, ne)`);
      return v.value === (op === 'eq') ? m : { op: 'not', arg: m };
    }
    if (isPath(lhs) && isPath(rhs)) {
      this.field(lhs);
      this.field(rhs);
      throw invalid(`${op} compares a property with a value, not with another property (quote text: 'text')`);
    }
    const [path, value, cmp] = isPath(lhs) ? [lhs, rhs, op] : isPath(rhs) ? [rhs, lhs, FLIP[op]] : [undefined, undefined, op];
    if (!path) throw invalid(`${op} compares a property with a value`);
    const field = this.field(path);
    return { op: 'cmp', field, cmp, value: this.typed(field, this.scalar(value)) };
  }

  /**
   * OData values are typed, so a value that cannot be the column's type is the
   * client's mistake (400), unlike the workflow API's untyped query strings:
   * text on a date column must be an ISO date, text on a number or boolean
   * column is refused.
   */
  private typed(field: FieldRef, v: Value): Value {
    const def = this.fields.map.fields.get(field.path[0]!)!;
    if (def.type === 'json' || v.type === 'null' || v.type === def.type) return v;
    const name = field.path.join('/');
    if (def.type === 'text') return { type: 'text', value: v.type === 'date' ? v.value : String(v.value) };
    if (def.type === 'date' && v.type === 'text') {
      if (parseDate(v.value) === undefined) throw invalid(`"${name}" is a date; '${v.value.slice(0, 60)}' is not an ISO 8601 date`, { property: name });
      return { type: 'date', value: v.value };
    }
    throw invalid(`"${name}" is a ${def.type}; it cannot be compared with a ${v.type}`, { property: name });
  }

  private call(c: Call, depth: number): Expr {
    const method = String(c?.method ?? '');
    const args = Array.isArray(c?.args) ? c.args : [];
    let fieldArg: Node;
    let valueArg: Node;
    if (!MATCH_METHODS.has(method)) throw invalid(`the function ${method.slice(0, 20)} is not supported here; supported: startswith, endswith, contains, substringof (with tolower/toupper on the property)`, { function: method.slice(0, 20) });
    if (method === 'startswith' || method === 'endswith' || method === 'contains') [fieldArg, valueArg] = args;
    else if (method === 'substringof') [valueArg, fieldArg] = args; // v2: substringof(value, field)
    else throw invalid(`the function ${method.slice(0, 20)} is not supported here; supported: startswith, endswith, contains, substringof (with tolower/toupper on the property)`, { function: method.slice(0, 20) });
    if (args.length !== 2) throw invalid(`${method} takes two arguments`);
    // tolower(name) / toupper(name) inside a match: case-insensitive
    let flags: '' | 'i' = '';
    if (isCall(fieldArg)) {
      const inner = (fieldArg as [string, Call])[1];
      if ((inner.method !== 'tolower' && inner.method !== 'toupper') || inner.args.length !== 1) throw invalid(`${method} takes a property (optionally in tolower or toupper)`);
      fieldArg = inner.args[0];
      flags = 'i';
    }
    if (!isPath(fieldArg)) throw invalid(`${method} takes a property and a text`);
    const v = this.value(valueArg);
    if (v.type !== 'text') throw invalid(`${method} takes a text value`);
    void depth;
    return { op: 'match', field: this.field(fieldArg), kind: method === 'substringof' ? 'contains' : method as 'startswith' | 'endswith' | 'contains', value: v.value, flags };
  }

  /** A property used in $filter: known and filterable. */
  field(n: Node): FieldRef {
    const ref = this.path(n);
    if (!this.fields.fields.find((f) => f.name === ref.path[0])?.filterable) {
      throw new AppError('INVALID_PROPERTY', `"${ref.path.join('/')}" cannot be filtered`, { property: ref.path.join('/') });
    }
    return ref;
  }

  path(n: Node): FieldRef {
    const path: string[] = [];
    for (let at = n as PathNode | undefined; at; at = at.property) {
      if (typeof at.name !== 'string' || (at as { key?: unknown }).key !== undefined || (at as { lambda?: unknown }).lambda) throw invalid('a property path holds something other than names');
      // the parser reads an unterminated 'text as a name starting with a quote
      if (!PROPERTY_NAME.test(at.name)) throw invalid(`"${at.name.slice(0, 60)}" is not a property name${at.name.startsWith("'") ? ' (an unterminated text?)' : ''}`);
      path.push(at.name);
    }
    const name = path.join('/');
    const def = this.fields.map.fields.get(path[0]!);
    if (!def) throw new AppError('INVALID_PROPERTY', `"${name}" is not a property that can be filtered or sorted here`, { property: name });
    if (def.type === 'json' && path.length < 2) throw new AppError('INVALID_PROPERTY', `"${name}" is an object; name a property inside it (${name}/…)`, { property: name });
    if (def.type !== 'json' && path.length > 1) throw new AppError('INVALID_PROPERTY', `"${path[0]}" has no properties`, { property: name });
    // an object field's documented properties (the metadata route lists them) hold values, not objects: `checkin/type`, not `checkin/type/x`
    const inner = def.type === 'json' ? this.fields.fields.find((f) => f.name === path[0])?.properties : undefined;
    if (inner && (path.length > 2 || !inner.includes(path[1]!))) {
      throw new AppError('INVALID_PROPERTY', `"${name}" is not a property of ${path[0]} (it has ${inner.map((p) => `${path[0]}/${p}`).join(', ')})`, { property: name });
    }
    return { path };
  }

  private value(n: Node): Value | { type: 'list'; values: Value[] } {
    if (n === null) return { type: 'null', value: null };
    const ref = (n as { bind?: unknown })?.bind;
    if (typeof ref !== 'number' || !this.binds[ref]) throw invalid('expected a value (a quoted text, a number, true, false, null or datetime\'…\')');
    return bindValue(this.binds[ref]!);
  }

  private scalar(n: Node): Value {
    const v = this.value(n);
    if (v.type === 'list') throw invalid('a list of values only goes with in');
    return v;
  }

  orderBy(n: Node, raw: string): Sort {
    const props = (n as { properties?: PathNode[] })?.properties ?? [];
    // The parser reads an order left out as desc; OData says asc. The raw items tell which were written.
    const explicit = raw.split(',').map((item) => /\s(asc|desc)\s*$/i.test(item));
    return props.map((p, i) => {
      const field = this.path(p);
      const def = this.fields.fields.find((f) => f.name === field.path[0]);
      if (!def?.sortable) throw new AppError('INVALID_PROPERTY', `"${field.path.join('/')}" cannot be sorted`, { property: field.path.join('/') });
      return { field, desc: explicit[i] ? (p as { order?: string }).order === 'desc' : false };
    });
  }

  integer(n: Node, option: string, max: number): number {
    const v = this.value(n);
    if (v.type !== 'number' || !Number.isSafeInteger(v.value) || v.value < 0) throw new AppError('INVALID_QUERY', `${option} is a whole number`);
    if (v.value > max) throw new AppError('INVALID_QUERY', `${option} is at most ${max}`, { max });
    return v.value;
  }

  select(n: Node): string[] | undefined {
    if (n === '*') return undefined;
    const props = (n as { properties?: PathNode[] })?.properties ?? [];
    return props.map((p) => {
      if (p.property) throw new AppError('INVALID_PROPERTY', `$select names top-level properties only ("${p.name}/…")`);
      if (!this.fields.names.has(p.name)) throw new AppError('INVALID_PROPERTY', `"${p.name}" is not a property of this listing`, { property: p.name });
      return p.name;
    });
  }
}

interface PathNode { name: string; property?: PathNode }
interface Call { method: string; args: Node[] }

const isPath = (n: Node): n is PathNode => typeof n === 'object' && n !== null && !Array.isArray(n) && typeof (n as PathNode).name === 'string';
const isCall = (n: Node): boolean => Array.isArray(n) && n[0] === 'call';

function bindValue([type, v]: [string, unknown]): Value | { type: 'list'; values: Value[] } {
  switch (type) {
    case 'Text':
      return { type: 'text', value: String(v) };
    case 'Real':
    case 'Integer':
      return { type: 'number', value: Number(v) };
    case 'Boolean':
      return { type: 'boolean', value: v === true };
    case 'Date':
    case 'Date Time': {
      const d = new Date(Number(v));
      if (Number.isNaN(d.getTime())) throw invalid('a date does not parse');
      return { type: 'date', value: d.toISOString() };
    }
    case 'List':
      return { type: 'list', values: (v as [string, unknown][]).map((b) => {
        const x = bindValue(b);
        if (x.type === 'list') throw invalid('lists do not nest');
        return x;
      }) };
    default:
      throw invalid(`values of type ${type.slice(0, 20)} are not supported`);
  }
}

export type { FieldType };
