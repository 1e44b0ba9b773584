import { AppError } from '../../errors/app-error.js';
import { hasNul } from '../../errors/input-errors.js';
import { textProblem } from '../../errors/input-errors.js';

/** Longest configuration path, in characters. */
export const CONFIG_PATH_MAX = 1024;
/** Most segments in a path. */
export const CONFIG_DEPTH_MAX = 32;
/** Longest segment, in characters. */
export const CONFIG_SEGMENT_MAX = 128;

const invalid = (raw: string, why: string) =>
  new AppError('INVALID_CONFIG_PATH', `the configuration path ${why}`, { path: [...raw].slice(0, 80).join('') });

/**
 * A configuration tree address (`path/to/item`, spec: Configuration) checked
 * and normalized: one leading `/` is dropped; then 1 to 32 segments of 1 to
 * 128 characters joined by single `/`, at most 1,024 characters in all. A
 * segment is never `.` or `..` (the tree has no relative addressing; a path
 * never names anything but itself), holds no `\`, no control character, no
 * lone surrogate, and is not `__proto__` (refused as JSON keys are, so a path
 * can always become an object key on the way to a client). `''` is the root,
 * allowed only where `allowRoot` says (`keys` below everything). Anything
 * else is 400 `INVALID_CONFIG_PATH`.
 */
export function parseConfigPath(raw: string | undefined, opts: { allowRoot: boolean }): string {
  const given = raw ?? '';
  if (hasNul(given)) throw invalid(given, 'contains a NUL character');
  const path = given.startsWith('/') ? given.slice(1) : given;
  if (path === '') {
    if (!opts.allowRoot) throw invalid(given, 'is empty: name an item (path=a/b/c)');
    return '';
  }
  if (path.length > CONFIG_PATH_MAX) throw invalid(given, `is longer than ${CONFIG_PATH_MAX} characters`);
  const segments = path.split('/');
  if (segments.length > CONFIG_DEPTH_MAX) throw invalid(given, `has more than ${CONFIG_DEPTH_MAX} segments`);
  for (const segment of segments) {
    if (segment === '') throw invalid(given, 'has an empty segment (a leading, doubled or trailing "/")');
    if (segment === '.' || segment === '..') throw invalid(given, `has a "${segment}" segment: paths are absolute, never relative`);
    if (segment.length > CONFIG_SEGMENT_MAX) throw invalid(given, `has a segment longer than ${CONFIG_SEGMENT_MAX} characters`);
    if (segment.includes('\\')) throw invalid(given, 'contains "\\": segments are separated by "/" only');
    if (segment === '__proto__') throw invalid(given, 'has a "__proto__" segment');
    const problem = textProblem(segment);
    if (problem) throw invalid(given, problem);
  }
  return path;
}
