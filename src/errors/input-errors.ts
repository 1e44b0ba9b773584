import { AppError } from './app-error.js';

/**
 * PostgreSQL `text` and `jsonb` cannot hold U+0000: such input would fail deep
 * in SQL as a 500. Every entry point for user text (JSON bodies, query
 * strings, query trees) refuses it up front with this one error.
 */
export const hasNul = (s: string): boolean => s.includes('\u0000');

export const nulRefused = (where: string) =>
  new AppError('INVALID_CHARACTER', `${where} contains a NUL character (\\u0000), which cannot be stored`, { where });

// eslint-disable-next-line no-control-regex -- control characters are what a name must not hold
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// in `u` mode a surrogate pair is one code point: this matches only unpaired ones
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * The one text rule for names, shared by repository entries (with rules of
 * their own on top: `nameProblem` in connectors/facets/repository.ts), tasks,
 * lists and printers: no control character (C0 U+0000-U+001F, DEL U+007F, C1
 * U+0080-U+009F) and no unpaired surrogate (not valid Unicode: PostgreSQL
 * would store it as U+FFFD, or refuse it). Returns why `text` breaks it, or
 * undefined.
 */
export function textProblem(text: string): string | undefined {
  if (CONTROL.test(text)) return 'contains a control character';
  if (LONE_SURROGATE.test(text)) return 'contains an unpaired surrogate (not valid Unicode)';
  return undefined;
}

/** Longest task or list name, in characters (UTF-16 code units, as JSON Schema's `maxLength` counts in JavaScript). */
export const DISPLAY_NAME_MAX = 1024;

/**
 * Throws 400 INVALID_NAME (with `details.name`, shortened) unless `name` is 1
 * to `max` characters and keeps the text rule. For names that are labels,
 * not paths (tasks, lists, printers): `/` and `\` are allowed.
 */
export function assertValidText(name: string, what: string, max = DISPLAY_NAME_MAX): void {
  const problem = name.length === 0 ? 'is empty' : name.length > max ? `is longer than ${max} characters` : textProblem(name);
  if (problem) throw new AppError('INVALID_NAME', `${what} ${problem}`, { name: [...name].slice(0, 80).join('') });
}
