import { lstat, mkdir, rename, unlink, writeFile } from 'node:fs/promises';
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

const exists = (p: string) => lstat(p).then(() => true, (err: NodeJS.ErrnoException) => {
  if (err.code === 'ENOENT') return false;
  throw err;
});

/** `name` with ` (<tag>)` before its extension. */
export function taggedName(name: string, tag: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${name.slice(0, dot)} (${tag})${name.slice(dot)}` : `${name} (${tag})`;
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
 * with `tag` when that name is used there already (an earlier file of the
 * same name): nothing in `done/` or `error/` is ever overwritten. Returns the
 * name it got, or undefined when the source was gone (moved already).
 */
export async function moveInto(folder: string, name: string, sub: string, tag: string): Promise<string | undefined> {
  let target = name;
  if (await exists(path.join(folder, sub, target))) target = taggedName(name, tag);
  for (let n = 2; await exists(path.join(folder, sub, target)); n++) target = taggedName(name, `${tag}-${n}`);
  try {
    await rename(path.join(folder, name), path.join(folder, sub, target));
    return target;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Moves the file to `error/` and writes `<its name there>.error.json` beside it. */
export async function moveToError(folder: string, name: string, tag: string, reason: FailureReason): Promise<string | undefined> {
  const moved = await moveInto(folder, name, ERROR_DIR, tag);
  await writeFile(path.join(folder, ERROR_DIR, `${moved ?? name}.error.json`), `${JSON.stringify({ file: name, ...reason }, null, 2)}\n`);
  return moved;
}

/** Deletes the source; false when it was gone already. */
export async function removeSource(folder: string, name: string): Promise<boolean> {
  try {
    await unlink(path.join(folder, name));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
