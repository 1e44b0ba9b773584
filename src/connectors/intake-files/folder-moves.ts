import { mkdir, writeFile } from 'node:fs/promises';
import { fileThreads } from '../../threads/file-thread.js';
import path from 'node:path';

/** The sub-folders an intake folder keeps beside its files. */
export const DONE_DIR = 'done';
export const ERROR_DIR = 'error';

/** What `<name>.error.json` says beside a file moved to `error/`. */
export interface FailureReason {
  code: string;
  message: string;
  /** ISO time of the failure. */
  time: string;
  /** Where in the file, for a malformed import. */
  row?: number;
  column?: string | number;
}

/**
 * Creates `folder` with its `done/` and `error/`; throws (with the OS's
 * reason) when that is impossible, e.g. a parent that is not writable.
 */
export async function prepareFolder(folder: string): Promise<void> {
  await mkdir(path.join(folder, DONE_DIR), { recursive: true });
  await mkdir(path.join(folder, ERROR_DIR), { recursive: true });
}

/**
 * Moves `folder/name` into `folder/<sub>/`, under its own name, or tagged
 * ` (<tag>)` before its extension when that name is used there already (an
 * earlier file of the same name): nothing in `done/` or `error/` is ever
 * overwritten. With `ino` (`dev:ino`), only that file moves: a new file
 * dropped at its name meanwhile stays. Returns the name it got, or undefined
 * when the source was gone (moved already) or another file. Done by a file
 * thread (`src/threads/file-thread.ts`), off the main thread.
 */
export function moveInto(folder: string, name: string, sub: string, tag: string, ino?: string): Promise<string | undefined> {
  return fileThreads.move(folder, name, sub, tag, ino);
}

/** Moves the file to `error/` and writes `<its name there>.error.json` beside it. */
export async function moveToError(folder: string, name: string, tag: string, reason: FailureReason): Promise<string | undefined> {
  const moved = await moveInto(folder, name, ERROR_DIR, tag);
  await writeFile(path.join(folder, ERROR_DIR, `${moved ?? name}.error.json`), `${JSON.stringify({ file: name, ...reason }, null, 2)}\n`);
  return moved;
}

/** Deletes the source (with `ino`, only that file); false when it was gone already (or another file). */
export function removeSource(folder: string, name: string, ino?: string): Promise<boolean> {
  return fileThreads.remove(folder, name, ino);
}
