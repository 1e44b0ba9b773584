/**
 * The typed filter and sort tree every listing query is parsed into. Parsers
 * (the workflow query string in `list-query.ts`, the print API's OData in `odata.ts`)
 * build it; `to-sql.ts` alone turns it into SQL. Nothing in the tree is SQL:
 * fields are API names, values are typed data.
 */

/** A typed literal. Dates are kept as the ISO text the client sent (PostgreSQL parses them). */
export type Value =
  | { type: 'text'; value: string }
  | { type: 'number'; value: number }
  | { type: 'boolean'; value: boolean }
  | { type: 'date'; value: string }
  | { type: 'null'; value: null };

/**
 * An API property: `['name']`, `['metadata', 'deep', 'tag']`. The field map of
 * the listing decides what each path means in SQL.
 */
export interface FieldRef {
  path: readonly string[];
}

export type CmpOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge';
export type MatchKind = 'regex' | 'startswith' | 'endswith' | 'contains';

export type Expr =
  | { op: 'and' | 'or'; args: Expr[] }
  | { op: 'not'; arg: Expr }
  | { op: 'cmp'; field: FieldRef; cmp: CmpOp; value: Value }
  /** Text matching on the field's text form; `i` = case-insensitive. */
  | { op: 'match'; field: FieldRef; kind: MatchKind; value: string; flags: '' | 'i' };

export interface SortKey {
  field: FieldRef;
  desc: boolean;
}

export type Sort = SortKey[];

/** A parsed collection query: paging, an optional filter and the sort keys. */
export interface ListQuery {
  offset: number;
  limit: number;
  filter?: Expr;
  sort: Sort;
}

export const field = (...path: string[]): FieldRef => ({ path });
export const text = (value: string): Value => ({ type: 'text', value });

/** AND of the given expressions; undefined when there are none (no filter). */
export function allOf(args: Expr[]): Expr | undefined {
  if (args.length === 0) return undefined;
  return args.length === 1 ? args[0] : { op: 'and', args };
}
