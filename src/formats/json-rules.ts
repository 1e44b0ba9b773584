import { AppError } from '../errors/app-error.js';
import { hasNul, nulRefused } from '../errors/input-errors.js';

/** What every JSON body (and JSON list import) is checked for once parsed, in one place: `checkValue` and `checkJsonNumbers`. */

/**
 * JSON numbers are kept exactly or refused, never changed silently.
 * `JSON.parse` reads every number as a double: `1e400` becomes Infinity
 * (stored as `null`), `1e-400` becomes 0, and an integer past 2^53 loses its
 * last digits. Such a literal is refused with 400 `INVALID_NUMBER`, nothing
 * changed; send it as a string to keep it exactly. Numbers that a double
 * holds (any fraction, `1e20`, subnormals) pass as `JSON.parse` reads them.
 *
 * Node 20's reviver has no source text, so the literals are read from the
 * text itself, which `JSON.parse` has already accepted: the leftmost match is
 * always a whole string or a whole number (no digit stands outside either).
 */
const TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
// only a long digit run or an exponent can be out of range or inexact: most bodies skip the scan
const SUSPECT = /\d{16}|\d[eE]/;

/** Why the number literal `lit` would not be kept exactly, or undefined. */
export function numberProblem(lit: string): string | undefined {
  const n = Number(lit);
  if (!Number.isFinite(n)) return 'is too large for a number (a double)';
  const mantissa = lit.replace(/[eE].*$/, '');
  if (n === 0 && /[1-9]/.test(mantissa)) return 'is too small for a number (a double): it would become 0';
  if (!/[.eE]/.test(lit) && !Number.isSafeInteger(n)) return 'is an integer beyond ±(2^53 - 1): its digits would change';
  return undefined;
}

/** Throws 400 INVALID_NUMBER for the first number literal in the JSON text `raw` that would change (see above). */
export function checkJsonNumbers(raw: string, where = 'the body'): void {
  if (!SUSPECT.test(raw)) return;
  TOKENS.lastIndex = 0;
  for (let m = TOKENS.exec(raw); m !== null; m = TOKENS.exec(raw)) {
    const lit = m[0];
    if (lit.charCodeAt(0) === 34 /* " */ || (lit.length < 16 && !/[eE]/.test(lit))) continue;
    const problem = numberProblem(lit);
    if (problem) {
      const shown = lit.length > 40 ? `${lit.slice(0, 40)}…` : lit;
      throw new AppError('INVALID_NUMBER', `${where} holds the number ${shown}, which ${problem}; send it as a string to keep it exactly`, { number: shown });
    }
  }
}

const MAX_DEPTH = 64;

/**
 * Refuses, with 400 and nothing changed, what would fail or misbehave later:
 * - a NUL character (`\u0000`, only ever written escaped in JSON) in any string
 *   or key: PostgreSQL text and jsonb cannot hold it;
 * - a `__proto__` key: JSON.parse keeps it as a plain key, but every plain
 *   object it is copied into (zod, merges) would take it as a prototype and
 *   drop it silently, so it is refused rather than half-stored;
 * - nesting deeper than 64 levels, which recursive consumers (JSON.stringify
 *   when storing) would answer with a stack overflow.
 * Iterative, so a hostile nesting cannot overflow the stack here either.
 */
export function checkValue(root: unknown): void {
  const stack: { v: unknown; path: string; depth: number }[] = [{ v: root, path: '$', depth: 0 }];
  while (stack.length > 0) {
    const { v, path, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (hasNul(v)) throw nulRefused(`the body at ${path}`);
      continue;
    }
    if (typeof v !== 'object' || v === null) continue;
    if (depth >= MAX_DEPTH) throw new AppError('JSON_TOO_DEEP', `the body nests deeper than ${MAX_DEPTH} levels at ${path.slice(0, 200)}`);
    if (Array.isArray(v)) {
      v.forEach((item, i) => stack.push({ v: item, path: `${path}[${i}]`, depth: depth + 1 }));
      continue;
    }
    for (const [k, item] of Object.entries(v)) {
      if (hasNul(k)) throw nulRefused(`a key in the body at ${path}`);
      if (k === '__proto__') throw new AppError('INVALID_KEY', `the key "__proto__" (at ${path}) is not allowed`, { path });
      stack.push({ v: item, path: `${path}.${k}`, depth: depth + 1 });
    }
  }
}
