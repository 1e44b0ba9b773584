import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

/**
 * Temporary directories of the test file that imports this module, removed
 * after its tests. The hook is registered when this module is first imported,
 * before any of the file's own hooks; after-hooks run in reverse order
 * (vitest's default `sequence.hooks: 'stack'`), so the directories go last,
 * once the runtimes, processes and printers writing into them are closed.
 */
const made: string[] = [];
afterAll(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

/**
 * A new directory `<prefix>XXXXXX` under the system temp directory, removed
 * (with everything in it) when the test file is done, however its tests end.
 */
export async function tempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** Whether anything (file, directory, link target) exists at `p`. */
export const pathExists = (p: string): Promise<boolean> => stat(p).then(() => true, () => false);
