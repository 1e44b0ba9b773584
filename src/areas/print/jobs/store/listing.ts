import type { ODataQuery } from '../../../../query/odata.js';
import { toSql } from '../../../../query/to-sql.js';
import type { Sql } from '../../../../storage/driver/database.js';
import { fillSql, sqlFile } from '../../../../storage/sql-file.js';
import { JOB_FIELDS } from '../job-fields.js';
import { FINAL_JOB_STATES } from '../job-states.js';

/**
 * The print job listing (`GET /v3/jobs/`): OData options compiled into one
 * read-only statement whose rows are the jobs' JSON text, built by
 * PostgreSQL (statements/list-page.sql). Nothing here writes.
 */

/** The page statement's template; `listingStatement` fills it per parsed query. */
const LIST_PAGE = sqlFile(new URL('./statements/list-page.sql', import.meta.url));

const jsonText = (col: string) => `to_json(${col})::text`;
const orNull = (expr: string) => `coalesce(${expr}, 'null')`;

/** Around a jsonb value or a timestamp in a listed page whose text present.ts rewrites (see LISTED_FIELDS). */
export const LISTING_MARK = '\x01';
/**
 * A jsonb column's text between two LISTING_MARKs, after a letter naming the
 * rewrite (`c`: written compactly, `s`: the presented stages; `t` is a
 * timestamp's, isoMarked); NULL for NULL. The mark cannot occur anywhere else
 * in a page: PostgreSQL escapes control characters in the JSON text of strings
 * (`to_json`) and of jsonb alike, and a timestamp's text has none.
 */
const raw = (rewrite: 'c' | 's', col: string) => `chr(1) || '${rewrite}' || ${col}::text || chr(1)`;
/**
 * A timestamptz's own text in UTC (`2026-11-23 04:00:00.123456`, DateStyle ISO as both drivers run it) between
 * LISTING_MARKs after `t`; present.ts writes it as `Date.toISOString()` does (UTC, milliseconds, `Z`). `to_char`
 * with the ISO pattern cost 0.5 µs a value in PostgreSQL, this text about 0.1 (docs/benchmarks.md, print listing).
 */
const isoMarked = (col: string): Part[] => [{ lit: `${LISTING_MARK}t` }, `(${col} AT TIME ZONE 'UTC')::text`, { lit: LISTING_MARK }];
/** isoMarked as SQL text, for a value that may be NULL (then NULL). */
const isoMarkedSql = (col: string) => `'${LISTING_MARK}t' || (${col} AT TIME ZONE 'UTC')::text || '${LISTING_MARK}'`;

/**
 * How a listing presents each field of a job (presentJob's order, present.ts),
 * as the field's JSON text built by PostgreSQL: `to_json` escapes strings
 * exactly as `JSON.stringify` does; numbers as text, timestamps as their own
 * text between marks (isoMarked); the retention computed from the defaults. jsonb (checkin, task, stages) comes as
 * its text between marks, since PostgreSQL writes it with spaces
 * (`{"type": "api"}`) and present.ts makes it compact (checking that in SQL cost
 * more than all the other fields: a regular expression, 1–5 µs a value).
 * Parsing 100 rows into numbers, Dates and objects, presenting them and
 * serialising them back was most of a listing's CPU in the API process
 * (bench/print-listing.ts, docs/benchmarks.md).
 */
type Part = string | { lit: string };
/** A timestamp that is never NULL, as a JSON string: the quotes and marks are literals, merged into the key's. */
const isoQuoted = (col: string): Part[] => [{ lit: '"' }, ...isoMarked(col), { lit: '"' }];
const LISTED_FIELDS: readonly [string, string | Part[] | ((d: RetentionDefaults) => string)][] = [
  ['id', 'id::text'],
  // one of the states the column's CHECK allows: nothing to escape
  ['status', [{ lit: '"' }, 'status', { lit: '"' }]],
  ['printer', jsonText('printer')],
  ['user', orNull(jsonText('creator'))],
  ['owner', orNull(jsonText('owner'))],
  ['name', jsonText('name')],
  ['fileName', orNull(jsonText('file_name'))],
  ['mimeType', jsonText('mime_type')],
  ['size', 'size::text'],
  ['copies', 'copies::text'],
  ['priority', 'priority::text'],
  ['pages', orNull('pages::text')],
  ['checkin', raw('c', 'checkin')],
  ['task', orNull(raw('c', 'task'))],
  ['flow', orNull(jsonText('flow'))],
  ['redirectedFrom', orNull(jsonText('redirected_from'))],
  ['message', orNull(jsonText('message'))],
  ['created', isoQuoted('created')],
  ['updated', isoQuoted('updated')],
  ['finished', orNull(`'"' || ${isoMarkedSql('finished')} || '"'`)],
  ['keepTempfiles', 'keep_tempfiles::text'],
  // most jobs have none
  ['stages', `CASE WHEN stages = '[]'::jsonb THEN '[]' ELSE ${raw('s', 'stages')} END`],
  ['retention', retentionSql],
  ['attempts', 'attempts::text'],
  ['nextAttempt', orNull(`'"' || ${isoMarkedSql('next_attempt_at')} || '"'`)],
];
const LISTED_BY_NAME = new Map(LISTED_FIELDS);
/** Every listed field's name, in presentJob's order (a listing without `$select`). */
export const LISTED_FIELD_NAMES: readonly string[] = LISTED_FIELDS.map(([n]) => n);

/** Seconds a job is kept after each state unless it sets its own (config `print.retention`). */
export type RetentionDefaults = Record<'processed' | 'canceled' | 'error' | 'paused', number>;

/**
 * presentJob's `retention` as JSON text (present.ts `retentionOf`): the job's own
 * seconds, else the default of its state; kept from `finished` in a final state,
 * from `updated` when paused. The defaults are validated integers, written as
 * literals so that the statement's text stays the same.
 */
function retentionSql(d: RetentionDefaults): string {
  const int = (n: number) => String(Math.trunc(Number(n)));
  const keep = `coalesce(retention_sec, CASE status WHEN 'processed' THEN ${int(d.processed)} WHEN 'canceled' THEN ${int(d.canceled)}`
    + ` WHEN 'error' THEN ${int(d.error)} WHEN 'paused' THEN ${int(d.paused)} END)`;
  const finals = FINAL_JOB_STATES.map((st) => `'${st}'`).join(', ');
  const since = `CASE WHEN status IN (${finals}) THEN finished WHEN status = 'paused' THEN updated END`;
  return `'{"seconds":' || coalesce(${keep}::text, 'null') || ',"custom":' || (retention_sec IS NOT NULL)::text`
    + ` || ',"deleteAfter":' || coalesce('"' || ${isoMarkedSql(`((${since}) + make_interval(secs => ${keep}))`)} || '"', 'null') || '}'`;
}

/**
 * `a || b || c …` as a balanced tree of `||`: PostgreSQL evaluates a chain left
 * to right, copying the growing row at every step (about 50 steps for a
 * 550-byte row); the tree copies each byte about log2(pieces) times.
 */
function concatSql(xs: string[]): string {
  if (xs.length === 1) return xs[0]!;
  const half = xs.length >> 1;
  return `(${concatSql(xs.slice(0, half))} || ${concatSql(xs.slice(half))})`;
}

/** The pieces of a listed row's JSON text for these fields, in order, adjacent literals merged (`,"created":"`). */
function rowParts(names: readonly string[], retention: RetentionDefaults, { open = true, close = true } = {}): Part[] {
  const parts: Part[] = [];
  const push = (x: Part) => {
    const prev = parts[parts.length - 1];
    if (typeof x !== 'string' && prev !== undefined && typeof prev !== 'string') prev.lit += x.lit;
    else parts.push(typeof x === 'string' ? x : { lit: x.lit });
  };
  if (open && !names.length) push({ lit: '{' });
  names.forEach((name, i) => {
    const f = LISTED_BY_NAME.get(name)!;
    push({ lit: `${i === 0 && open ? '{' : ','}"${name}":` });
    for (const x of typeof f === 'function' ? [f(retention)] : typeof f === 'string' ? [f] : f) push(x);
  });
  if (close) push({ lit: '}' });
  return parts;
}

/**
 * The fields migration 017's `listing` column holds for every job, in order:
 * `id` to `stages`, the text of a whole listing's row up to the fields that
 * are not the row's alone (`retention` depends on the configuration).
 */
export const LISTING_COLUMN_FIELDS: readonly string[] = LISTED_FIELD_NAMES.slice(0, LISTED_FIELD_NAMES.indexOf('stages') + 1);
const LISTING_TAIL_FIELDS = LISTED_FIELD_NAMES.slice(LISTING_COLUMN_FIELDS.length);

/**
 * A whole row's JSON text from the `listing` column and the fields after it.
 * The column is written by a trigger with every row (never NULL); the fallback
 * builds the same fields here should it be.
 */
const fromListingColumn = (retention: RetentionDefaults): string =>
  `(coalesce(listing, ${concatSql(rowParts(LISTING_COLUMN_FIELDS, retention, { close: false }).map(partSql))})`
  + ` || ${concatSql(rowParts(LISTING_TAIL_FIELDS, retention, { open: false }).map(partSql))})`;
const partSql = (x: Part) => typeof x === 'string' ? `(${x})` : `'${x.lit}'`;

/** Each listed field's piece of the row's JSON text on its own (`',"status":"' || (status) || '"'`), for bench/print-listing-sql.ts. */
export const listedFieldsSql = (retention: RetentionDefaults): string[] => LISTED_FIELDS.map(([name, f], i) =>
  [{ lit: `${i === 0 ? '{' : ','}"${name}":` }, ...(typeof f === 'function' ? [f(retention)] : typeof f === 'string' ? [f] : f)].map(partSql).join(' || '));

const projections = new Map<string, string>();

/** A listed job's JSON text (`{"id":1,…}`) for the presented fields (`$select`, else all), built once per field list. */
function rowJson(select: readonly string[] | undefined, retention: RetentionDefaults): string {
  const names = select ? [...new Set(select)].filter((n) => LISTED_BY_NAME.has(n)) : LISTED_FIELD_NAMES;
  const key = `${select ? 's' : '*'} ${names.join(',')} ${retention.processed} ${retention.canceled} ${retention.error} ${retention.paused}`;
  let p = projections.get(key);
  if (p) return p;
  p = select ? concatSql(rowParts(names, retention).map(partSql)) : fromListingColumn(retention);
  if (projections.size < 200) projections.set(key, p);
  return p;
}

/**
 * One page of an OData listing as JSON text (jsonb between LISTING_MARKs, for
 * present.ts `jobListWriter`), limited to `scope` (the caller's identities as
 * creator or owner) when given; `total` with `$inlinecount=allpages`.
 *
 * One statement returns the page as one text column per job, each row's JSON
 * built by PostgreSQL, joined here: a hundred rows of many columns cost the
 * API process more to receive than the text itself (docs/benchmarks.md). The
 * rows are not joined in PostgreSQL (`string_agg`): the 55 KB value of a 100-job page and its copies were freed at the end of every
 * statement, and glibc gave that memory back to the kernel each time (a
 * `brk` shrink); on a virtual machine where that costs a TLB flush across
 * cores it took 1.5 ms of the backend's CPU per request (docs/benchmarks.md).
 * `$top` is a literal, a validated integer like the retention defaults: a
 * `LIMIT $n` is costed as 10 % of the matching rows, more than a page of 100,
 * so PostgreSQL never chose the prepared statement's generic plan and planned
 * this statement again at every request (0.15 ms of its CPU each).
 * `$skip` stays a parameter, since every page of a walk would otherwise be a
 * statement of its own; it is left out when 0.
 */
export async function listJobs(sql: Sql, q: ODataQuery, scope: string[] | undefined, retention: RetentionDefaults): Promise<{ page: string; total?: number }> {
  const st = listingStatement(q, scope !== undefined, q.skip > 0, retention);
  const params = scope ? [scope, ...st.params] : [...st.params];
  const countParams = [...params];
  if (q.skip > 0) params.push(q.skip);
  const rows = await sql.queryArrays<[string]>(st.page, params);
  const page = `[${rows.map((r) => r[0]).join(',')}]`;
  if (!q.inlineCount) return { page };
  const c = await sql.query<{ n: string }>(st.count, countParams);
  return { page, total: Number(c.rows[0]!.n) };
}

interface ListingStatement {
  page: string;
  count: string;
  /** The filter's bound values (after the scope's `$1` when scoped). */
  params: unknown[];
}

/**
 * The listing's statements for parsed options, built once per options object:
 * `parseODataQuery` hands the same object back for the same options (bounded
 * there), so a polled listing reuses the very same text. Besides the
 * translation, that spares hashing and comparing a 3 KB text at every request
 * (the driver's statement name lookup, `pg`'s prepared-statement check), which
 * a string seen before answers from its cached hash and by identity.
 */
const listingStatements = new WeakMap<ODataQuery, Map<string, ListingStatement>>();

function listingStatement(q: ODataQuery, scoped: boolean, skipped: boolean, retention: RetentionDefaults): ListingStatement {
  const key = `${scoped ? 's' : '-'}${skipped ? 'o' : '-'} ${retention.processed} ${retention.canceled} ${retention.error} ${retention.paused}`;
  let byKey = listingStatements.get(q);
  const hit = byKey?.get(key);
  if (hit) return hit;
  const params: unknown[] = [];
  const where: string[] = [];
  if (scoped) {
    params.push(undefined); // the caller's identities, bound per request
    where.push('(creator = ANY($1::text[]) OR owner = ANY($1::text[]))');
  }
  const frag = toSql(q, JOB_FIELDS.map, params, 'id DESC');
  where.push(...frag.where);
  const cond = where.length ? `WHERE ${where.join(' AND ')}` : '';
  if (!Number.isSafeInteger(q.top) || q.top < 0) throw new Error(`listJobs: $top ${q.top} is not a count`);
  const window = `LIMIT ${q.top}${skipped ? ` OFFSET $${params.length + 1}` : ''}`;
  const st: ListingStatement = {
    page: fillSql(LIST_PAGE, { row_json: rowJson(q.select, retention), where: cond, order_by: frag.orderBy, window }),
    count: `SELECT count(*) AS n FROM print_jobs ${cond}`,
    params: scoped ? params.slice(1) : params,
  };
  if (!byKey) listingStatements.set(q, (byKey = new Map()));
  if (byKey.size < 8) byKey.set(key, st);
  return st;
}
