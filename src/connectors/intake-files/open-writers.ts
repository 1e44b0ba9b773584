import { fileThreads } from '../../threads/file-thread.js';

/**
 * Which of `paths` some process has open for writing, where Linux can tell:
 * every process's open descriptors in `/proc/<pid>/fd` whose target is one of
 * the paths, and the access mode in `/proc/<pid>/fdinfo/<fd>`. Processes this
 * one may not inspect (another user's, without privileges) are not seen, and
 * on a system without `/proc` nothing is: the stable-size wait still holds.
 * One pass over /proc serves any number of paths; a file thread makes it
 * (`src/threads/file-thread-entry.ts`), one blocking system call at a time.
 */
export async function openForWriting(paths: ReadonlySet<string>): Promise<Set<string>> {
  if (paths.size === 0) return new Set();
  return new Set(await fileThreads.writers([...paths]));
}
