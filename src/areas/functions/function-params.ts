import { AppError } from '../../errors/app-error.js';

/** Most pairs in one call, and the longest text they may come in. */
export const MAX_PAIRS = 64;
export const MAX_PAIRS_TEXT = 8192;

const invalid = (message: string, details?: Record<string, unknown>) => new AppError('INVALID_PARAMETERS', message, details);

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw invalid(`${what} "${part.slice(0, 40)}" is not valid percent-encoding`);
  }
}

/**
 * A function call's `key::value;key::value` text (the spec's form: the query
 * string itself, or a `text/plain` body) as a null-prototype object of raw
 * strings, so a key named `__proto__` is just an unknown parameter. Keys and
 * values are percent-decoded (`%3B` for a `;` in a value); an empty text is
 * no parameters. 400 INVALID_PARAMETERS for a pair without `::`, an empty or
 * repeated key, more than MAX_PAIRS pairs or a text over MAX_PAIRS_TEXT.
 */
export function parsePairs(text: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  if (text.length > MAX_PAIRS_TEXT) throw invalid(`the parameters are longer than ${MAX_PAIRS_TEXT} characters`);
  if (text === '') return out;
  const pairs = text.split(';');
  // a trailing `;` ends the last pair rather than opening an empty one
  if (pairs.at(-1) === '') pairs.pop();
  if (pairs.length > MAX_PAIRS) throw invalid(`at most ${MAX_PAIRS} parameters`);
  for (const pair of pairs) {
    const at = pair.indexOf('::');
    if (at < 0) throw invalid(`"${pair.slice(0, 40)}" is not a key::value pair (pairs are joined by ";")`, { pair: pair.slice(0, 40) });
    const key = decode(pair.slice(0, at), 'the key');
    const value = decode(pair.slice(at + 2), 'the value');
    if (key === '') throw invalid(`"${pair.slice(0, 40)}" has an empty key`, { pair: pair.slice(0, 40) });
    if (Object.hasOwn(out, key)) throw invalid(`the parameter "${key.slice(0, 64)}" is given more than once`, { parameter: key.slice(0, 64) });
    out[key] = value;
  }
  return out;
}

/** A JSON body's parameters: an object (not an array, not null), copied into a null-prototype object. */
export function jsonParams(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw invalid('a JSON body of a function call is an object of parameters');
  const out = Object.create(null) as Record<string, unknown>;
  const keys = Object.keys(body);
  if (keys.length > MAX_PAIRS) throw invalid(`at most ${MAX_PAIRS} parameters`);
  for (const k of keys) out[k] = (body as Record<string, unknown>)[k];
  return out;
}
