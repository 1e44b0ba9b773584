import { constants, type Stats } from 'node:fs';
import { lstat, open, readlink, realpath, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../errors/app-error.js';
import { isPartFileName } from '../../blobs/part-files.js';
import { assertValidName } from '../facets/repository.js';

/**
 * The one place that turns a repository-relative path into an absolute one.
 * Rows hold POSIX-style paths relative to the connector root ('' = the root,
 * 'a/b.pdf' = nested). A path is accepted only when every segment is a valid
 * name, no directory on the way is a symlink, and the final component is not a
 * symlink. Files are then opened with O_NOFOLLOW and (on Linux) the opened
 * descriptor is checked again, because a symlink may be swapped in between the
 * check and the use.
 */

// Windows has no O_NOFOLLOW; the runtime targets POSIX, where it is always defined.
const O_NOFOLLOW = constants.O_NOFOLLOW ?? 0;
const MAX_NAME_BYTES = 255;

/** Names of the temporary files `writeContent` writes next to the target; never listed, never creatable. */
export const TEMP_NAME: { test(name: string): boolean } = { test: (name) => name.startsWith('.wcr-') && isPartFileName(name) };

/**
 * Throws 400 INVALID_NAME unless `name` is a single, harmless path component:
 * the repository-wide name rule (names.ts), plus what the file system needs:
 * at most 255 UTF-8 bytes, and not a name reserved for part files.
 */
export function validateName(name: string): void {
  assertValidName(name);
  const reason = Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES ? `is longer than ${MAX_NAME_BYTES} bytes`
    : TEMP_NAME.test(name) ? 'is reserved for temporary files'
    : undefined;
  if (reason) throw new AppError('INVALID_NAME', `the name ${reason}`, { name: name.slice(0, 80) });
}

/** `validateName` as a predicate (used to skip unusable names on disk). */
export function isValidName(name: string): boolean {
  try {
    validateName(name);
    return true;
  } catch {
    return false;
  }
}

/** Joins a repository-relative collection path and a child name. */
export const joinRel = (parentPath: string, name: string): string => (parentPath === '' ? name : `${parentPath}/${name}`);

/** True when `p` is `root` or below it (both absolute, normalized). */
export function isInside(root: string, p: string): boolean {
  const prefix = root.endsWith(path.sep) ? root : root + path.sep;
  return p === root || p.startsWith(prefix);
}

const escape = (relPath: string, why: string) => new AppError('PATH_ESCAPE', `path "${relPath}" ${why}`, { path: relPath });

/** Splits a relative path into validated segments; '' is the root (no segments). */
export function splitRelPath(relPath: string): string[] {
  if (relPath === '') return [];
  if (relPath.startsWith('/') || relPath.startsWith('\\') || path.isAbsolute(relPath)) throw escape(relPath, 'is absolute');
  const segments = relPath.split('/');
  if (segments.some((s) => s === '..' || s === '.' || s === '')) throw escape(relPath, 'has a relative or empty segment');
  segments.forEach(validateName);
  return segments;
}

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;

/**
 * Resolves the parent directory of `relPath` and checks it: its real path must
 * be exactly `root` joined with the parent segments, so no directory on the way
 * is a symlink (not even one pointing back inside: symlinks are never followed).
 * The final component is not looked at. Returns the absolute path.
 * Throws 403 PATH_ESCAPE, 404 ENTRY_NOT_FOUND (parent gone) or 400 INVALID_NAME.
 */
export async function resolveParent(root: string, relPath: string): Promise<string> {
  const segments = splitRelPath(relPath);
  const realRoot = await realpath(root);
  if (segments.length === 0) return realRoot;
  const expectedParent = path.join(realRoot, ...segments.slice(0, -1));
  let realParent: string;
  try {
    realParent = await realpath(expectedParent);
  } catch (err) {
    if (code(err) === 'ELOOP') throw escape(relPath, 'runs through a symlink loop');
    if (code(err) === 'ENOENT' || code(err) === 'ENOTDIR') throw new AppError('ENTRY_NOT_FOUND', `"${relPath}" does not exist`, { path: relPath });
    throw err;
  }
  if (realParent !== expectedParent) {
    throw escape(relPath, isInside(realRoot, realParent) ? 'runs through a symlink' : 'leaves the repository root');
  }
  return path.join(realParent, segments[segments.length - 1]!);
}

/**
 * Maps `relPath` to an absolute path inside `root` (see `resolveParent`) and
 * checks that the final component exists and is not a symlink.
 * Throws 403 PATH_ESCAPE, 404 ENTRY_NOT_FOUND or 400 INVALID_NAME.
 */
export async function resolveInside(root: string, relPath: string): Promise<string> {
  return (await inspectInside(root, relPath)).abs;
}

/** `resolveInside` that also returns the lstat of the final component. */
export async function inspectInside(root: string, relPath: string): Promise<{ abs: string; stats: Stats }> {
  const abs = await resolveParent(root, relPath);
  let stats: Stats;
  try {
    stats = await lstat(abs);
  } catch (err) {
    if (code(err) === 'ENOENT' || code(err) === 'ENOTDIR') throw new AppError('ENTRY_NOT_FOUND', `"${relPath}" does not exist`, { path: relPath });
    throw err;
  }
  if (stats.isSymbolicLink()) throw escape(relPath, 'is a symlink');
  return { abs, stats };
}

/**
 * Opens `abs` (obtained from `resolveParent`/`resolveInside`) with O_NOFOLLOW
 * added, then, where /proc shows what was really opened, checks that the
 * descriptor lies inside `root`: this catches a directory on the way being
 * swapped for a symlink after the path was checked. A file created by such an
 * escaped open (O_CREAT|O_EXCL, so it is ours) is removed again.
 */
export async function openNoFollow(root: string, abs: string, flags: number, mode = 0o666): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(abs, flags | O_NOFOLLOW, mode);
  } catch (err) {
    // Linux reports a symlink refused by O_NOFOLLOW as ELOOP, the BSDs as EMLINK.
    if (code(err) === 'ELOOP' || code(err) === 'EMLINK') throw escape(path.basename(abs), 'is a symlink');
    throw err;
  }
  const actual = await openedPath(handle);
  if (actual !== undefined && !isInside(await realpath(root), actual)) {
    await handle.close();
    if (flags & constants.O_CREAT && flags & constants.O_EXCL) await unlink(actual).catch(() => {});
    throw escape(path.basename(abs), 'was swapped for a link leaving the repository root');
  }
  return handle;
}

/** The path the kernel opened for `handle`, or undefined where /proc is not available. */
async function openedPath(handle: FileHandle): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined;
  try {
    return (await readlink(`/proc/self/fd/${handle.fd}`)).replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}

/** Flags for reading: O_NONBLOCK so that a FIFO swapped in cannot block a thread (it is refused after fstat). */
export const READ_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);
/** Flags for creating a new file that must not exist yet. */
export const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL;
