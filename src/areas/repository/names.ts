import { AppError } from '../../errors/app-error.js';

/**
 * The one rule for entry names, applied wherever a name enters: create,
 * rename (PUT/PATCH), the `name` of copy, move and import, and the name an
 * import derives from its URL. Connectors may add limits of their own on top
 * (the filesystem: 255 UTF-8 bytes, names it reserves for temporary files).
 *
 * A name is 1 to 255 characters (Unicode code points), is not `.` or `..`,
 * and contains no `/` or `\`, no control character (C0 0x00-0x1f, DEL 0x7f,
 * C1 0x80-0x9f) and no lone surrogate (it could not be stored as UTF-8).
 */

export const NAME_MAX_CHARS = 255;

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const LONE_SURROGATE = /\p{Surrogate}/u;

/** Why `name` is not a valid entry name, or undefined when it is. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name === '.' || name === '..') return 'is a relative directory reference';
  if (name.includes('/') || name.includes('\\')) return 'contains a path separator ("/" or "\\")';
  if (CONTROL.test(name)) return 'contains a control character';
  if (LONE_SURROGATE.test(name)) return 'contains an unpaired surrogate (not valid Unicode)';
  if ([...name].length > NAME_MAX_CHARS) return `is longer than ${NAME_MAX_CHARS} characters`;
  return undefined;
}

/** Throws 400 INVALID_NAME (with `details.name`, shortened) unless `name` is valid. */
export function assertValidName(name: string, what = 'the name'): void {
  const problem = nameProblem(name);
  if (problem) throw new AppError('INVALID_NAME', `${what} ${problem}`, { name: [...name].slice(0, 80).join('') });
}

/**
 * The name an import takes from its URL when no `name` is given: the last
 * non-empty path segment, percent-decoded (`import` when the path has none).
 * Throws 400 INVALID_NAME when that segment is not a valid name (or not valid
 * percent-encoding): such a name is refused at launch, never rewritten, so a
 * caller always gets the name they asked for or a reason; pass `name` instead.
 */
export function nameFromUrl(url: URL): string {
  const segment = url.pathname.split('/').filter(Boolean).pop();
  if (segment === undefined) return 'import';
  let name: string;
  try {
    name = decodeURIComponent(segment);
  } catch {
    throw new AppError('INVALID_NAME', 'the name taken from the URL is not valid percent-encoding; pass parameters.name', { name: segment.slice(0, 80) });
  }
  assertValidName(name, 'the name taken from the URL (pass parameters.name to choose another)');
  return name;
}
