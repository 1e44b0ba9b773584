import { AppError } from '../errors/app-error.js';
import type { FieldRef } from './tree.js';

/** How a column compares: `json` columns hold documents whose inner paths are fields too. */
export type FieldType = 'text' | 'number' | 'date' | 'boolean' | 'json';

/** One API field: a trusted SQL expression (a constant of the code, never user text) and its type. */
export interface FieldDef {
  sql: string;
  type: FieldType;
  /** A NOT NULL column sorts without `NULLS LAST`, so a plain index serves both directions. */
  notNull?: boolean;
}

/**
 * How a listing's API fields map onto SQL. Lookups go through a `Map`, so a
 * field named `__proto__` or `constructor` is simply unknown.
 */
export interface FieldMap {
  fields: ReadonlyMap<string, FieldDef>;
  /**
   * A `json` field that any other name is a path into (the workflow API's free
   * metadata: `?colour=red` means `metadata.colour`). Without it, unknown names are 400.
   */
  rest?: string;
}

/** Builds a FieldMap from a literal table (code constants only). */
export function fieldMap(fields: Record<string, FieldDef>, rest?: string): FieldMap {
  const map = new Map(Object.entries(fields));
  if (rest !== undefined && map.get(rest)?.type !== 'json') throw new Error(`field map: rest field "${rest}" must be a json field`);
  return { fields: map, rest };
}

/** Where a field reference points: a typed column, or a path inside a jsonb column. */
export type Resolved =
  | { kind: 'column'; sql: string; type: Exclude<FieldType, 'json'>; notNull?: boolean }
  | { kind: 'json'; sql: string; path: string[] };

/**
 * `name` is the column; `metadata.a.b` is the path a.b inside metadata; any
 * other name, dotted or not (and `metadata` alone), is a path inside the rest
 * field, as the workflow listings always had it.
 */
export function resolveField(map: FieldMap, ref: FieldRef): Resolved {
  const [head, ...tail] = ref.path;
  const def = head === undefined ? undefined : map.fields.get(head);
  if (def && def.type !== 'json' && tail.length === 0) return { kind: 'column', sql: def.sql, type: def.type, notNull: def.notNull };
  if (def && def.type === 'json' && tail.length > 0) return { kind: 'json', sql: def.sql, path: tail };
  const rest = map.rest === undefined ? undefined : map.fields.get(map.rest);
  if (rest && ref.path.length > 0) return { kind: 'json', sql: rest.sql, path: [...ref.path] };
  const name = ref.path.join('.');
  throw new AppError('INVALID_PROPERTY', `"${name}" is not a property of this listing`, { property: name });
}
