import { AppError } from '../../errors/app-error.js';
import type { RepositoryBackend } from '../connector.js';

/**
 * File system errors that the request caused, as 4xx bodies: a path past the
 * OS limit (ENAMETOOLONG: total length over PATH_MAX, deep nesting of long
 * names) is bad input; a file or directory that vanished underneath, or a
 * directory where a file was expected, is the tree having changed. Anything
 * else (EACCES, EIO, ENOSPC...) stays a server error.
 */
export function fsError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  switch ((err as NodeJS.ErrnoException | undefined)?.code) {
    case 'ENAMETOOLONG':
      return new AppError('NAME_TOO_LONG', 'the path is longer than the file system allows: use shorter names or less nesting');
    case 'ENOENT':
    case 'ENOTDIR':
      return new AppError('ENTRY_NOT_FOUND', 'the file or a directory on its path no longer exists');
    case 'EISDIR':
      return new AppError('NOT_A_FILE', 'a directory is where the file should be');
    default:
      return err;
  }
}

/** Runs `fn`, turning its file system errors into API errors (see `fsError`). */
export async function mappingFsErrors<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw fsError(err);
  }
}

/** The backend with every method's file system errors mapped (see `fsError`). */
export function withFsErrors(backend: RepositoryBackend): RepositoryBackend {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(backend)) {
    out[key] = typeof value === 'function'
      ? (...args: unknown[]) => mappingFsErrors(() => (value as (...a: unknown[]) => Promise<unknown>).apply(backend, args))
      : value;
  }
  return out as unknown as RepositoryBackend;
}
