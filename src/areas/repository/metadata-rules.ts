/**
 * What metadata the database can store. PostgreSQL's jsonb refuses NUL
 * (\u0000) and unpaired UTF-16 surrogates in strings and keys, and very deep
 * nesting costs stack in every later operator; such values must be refused as
 * 400 before anything is written (a rename on disk would otherwise happen
 * before the database says no).
 */

/** Deepest nesting of objects and arrays below `metadata` itself. */
export const METADATA_MAX_DEPTH = 32;
/** Largest serialized metadata (JSON, UTF-16 code units), also after a PATCH merge. */
export const METADATA_MAX_CHARS = 256 * 1024;

// An unpaired surrogate: a high one not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why `text` cannot be stored in PostgreSQL text or jsonb, or undefined when it can. */
export function unstorableText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (\\u0000)';
  if (LONE_SURROGATE.test(text)) return 'contains an unpaired UTF-16 surrogate';
  return undefined;
}

/** One problem with a metadata value: where (key path below `metadata`) and what. */
export interface MetadataProblem {
  path: (string | number)[];
  message: string;
}

/**
 * The first reason `value` cannot be stored as metadata, or undefined. Walks
 * at most `METADATA_MAX_DEPTH + 1` levels, so the walk itself is bounded
 * however deep the input is.
 */
export function metadataProblem(value: unknown): MetadataProblem | undefined {
  const found = walk(value, [], 0);
  if (found) return found;
  if (JSON.stringify(value).length > METADATA_MAX_CHARS) {
    return { path: [], message: `metadata is larger than ${METADATA_MAX_CHARS} characters as JSON` };
  }
  return undefined;
}

function walk(value: unknown, at: (string | number)[], depth: number): MetadataProblem | undefined {
  if (typeof value === 'string') {
    const why = unstorableText(value);
    return why ? { path: at, message: `value ${why}` } : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= METADATA_MAX_DEPTH) return { path: at, message: `metadata is nested deeper than ${METADATA_MAX_DEPTH} levels` };
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  for (const [key, child] of entries) {
    const why = typeof key === 'string' ? unstorableText(key) : undefined;
    if (why) return { path: [...at, key], message: `key ${why}` };
    const found = walk(child, [...at, key], depth + 1);
    if (found) return found;
  }
  return undefined;
}
