import type { Dirent } from 'node:fs';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { sweepPartDir, type SweepResult } from '../../blobs/part-files.js';

/**
 * Removes the abandoned `.wcr-….part` files that killed writers left next to
 * their targets anywhere below `root` (ownership rules: blobs/part-files.ts).
 * Walks directories only, never through a symlink; directories that vanish or
 * cannot be read meanwhile are skipped.
 */
export async function sweepFilesystemParts(root: string): Promise<SweepResult> {
  const total: SweepResult = { removed: 0, bytes: 0 };
  const pending = [root];
  while (pending.length > 0) {
    const dir = pending.pop()!;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
    // Dirent types come from lstat semantics: a symlink to a directory is not a directory here
    for (const d of entries) if (d.isDirectory()) pending.push(path.join(dir, d.name));
    const swept = await sweepPartDir(dir, entries);
    total.removed += swept.removed;
    total.bytes += swept.bytes;
  }
  return total;
}
