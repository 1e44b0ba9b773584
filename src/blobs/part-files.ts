import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Dirent } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * Temporary `.part` files (an upload or import being written) and who owns
 * them. Several processes may share DATA_DIR, so a process may only delete a
 * part file it knows to be abandoned. Each name carries its writer's tag:
 * `<host>-<pid>-<boot>.<uuid>.part` (host: a hash of the host name; boot: a
 * random id of this process). A part file is abandoned when
 *
 * - its writer ran on this host and is gone: no process has that pid, or the
 *   pid is now this very process with another boot id (a restarted container
 *   often gets its old pid back);
 * - otherwise (another host, an old-style name, or a live pid that may be an
 *   unrelated process reusing it) when it was not written to for
 *   `STALE_PART_MS`: a live writer writes continuously, and idle transfers are
 *   cut by their timeouts long before that.
 *
 * This process's own part files are never abandoned: the writer removes them
 * itself when an attempt fails.
 */

export const STALE_PART_MS = 3_600_000;

const HOST = createHash('sha256').update(os.hostname()).digest('hex').slice(0, 8);
const BOOT = randomBytes(4).toString('hex');
/** This process's tag in the part files it writes. */
export const PART_OWNER = `${HOST}-${process.pid}-${BOOT}`;

const PART = /^(?:\.wcr-)?(?:([0-9a-f]{8})-(\d{1,10})-([0-9a-f]{8})\.)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.part$/;

/** A fresh part file name owned by this process (`prefix` for hidden files next to the target). */
export const partFileName = (prefix = ''): string => `${prefix}${PART_OWNER}.${randomUUID()}.part`;

/** Whether `name` is a part file name (either prefix, with or without an owner tag). */
export const isPartFileName = (name: string): boolean => PART.test(name);

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

/** Whether the part file `name`, last modified at `mtimeMs`, is abandoned (see above). */
export function isAbandoned(name: string, mtimeMs: number, now = Date.now()): boolean {
  const m = PART.exec(name);
  if (!m) return false;
  const [, host, pid, boot] = m;
  if (host === HOST && pid !== undefined) {
    if (`${host}-${pid}-${boot}` === PART_OWNER) return false;
    if (Number(pid) === process.pid || !pidAlive(Number(pid))) return true;
  }
  return now - mtimeMs > STALE_PART_MS;
}

export interface SweepResult {
  removed: number;
  bytes: number;
}

/** Removes the abandoned part files directly inside `dir` (a missing directory counts as empty). */
export async function sweepPartDir(dir: string, entries?: Dirent[]): Promise<SweepResult> {
  const out: SweepResult = { removed: 0, bytes: 0 };
  const list = entries ?? await readdir(dir, { withFileTypes: true }).catch(() => [] as Dirent[]);
  for (const d of list) {
    if (!d.isFile() || !isPartFileName(d.name)) continue;
    const file = path.join(dir, d.name);
    const info = await stat(file).catch(() => undefined);
    if (!info || !isAbandoned(d.name, info.mtimeMs)) continue;
    await rm(file, { force: true });
    out.removed += 1;
    out.bytes += info.size;
  }
  return out;
}
