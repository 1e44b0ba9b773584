import type { Stats } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { ChangedContent, EntryRow, EntryRowsPort, FoundEntry, SeenChild, SyncChild } from '../connector.js';
import { AppError, statusOf } from '../../errors/app-error.js';
import { TEMP_NAME, inspectInside, isValidName, joinRel } from './safe-path.js';

/** A recursive sync stops descending once it has seen this many entries. */
export const SYNC_LIMIT = 100_000;
// Parallel lstat calls while reading a directory: enough to hide latency on network mounts.
const STAT_CONCURRENCY = 64;

const MIME_TYPES: Record<string, string> = {
  pdf: 'application/pdf', png: 'image/png', jpg: 'image/jpeg', jpeg: 'image/jpeg', gif: 'image/gif',
  tif: 'image/tiff', tiff: 'image/tiff', webp: 'image/webp', txt: 'text/plain', csv: 'text/csv',
  json: 'application/json', xml: 'application/xml', html: 'text/html', zip: 'application/zip',
  ps: 'application/postscript', pcl: 'application/vnd.hp-pcl', rli: 'application/rli',
};

/** The media type of a file name by its extension (application/octet-stream when unknown). */
export function guessMimeType(name: string): string {
  const ext = path.extname(name).slice(1).toLowerCase();
  return MIME_TYPES[ext] ?? 'application/octet-stream';
}

/** The content version of a file changed outside the API: mtime (whole ms) and size. */
export const fingerprint = (st: Stats): string => `m${Math.floor(st.mtimeMs)}-${st.size}`;

/**
 * Whether a document row no longer describes the file. Rows written by a sync
 * carry the stat fingerprint and compare exactly; rows written through the API
 * carry the sha256 and count as changed when the size differs or the file was
 * modified after the row (so the service must set `modified` after the write).
 */
export function contentChanged(row: Pick<EntryRow, 'content_version' | 'size' | 'modified'>, st: Stats): boolean {
  if (row.content_version?.startsWith('m')) return row.content_version !== fingerprint(st);
  return row.size !== st.size || Math.floor(st.mtimeMs) > new Date(row.modified).getTime();
}

interface DiskEntry {
  name: string;
  type: 'document' | 'collection';
  stats: Stats;
}

const msDate = (ms: number): Date => new Date(Math.floor(ms));
const isGone = (err: unknown): boolean =>
  (err instanceof AppError && (statusOf(err) === 404 || err.code === 'PATH_ESCAPE')) ||
  ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException | undefined)?.code ?? '');

/** Regular files and directories of `abs`: symlinks, specials, temp files and unusable names are skipped. */
async function readDirectory(abs: string): Promise<DiskEntry[]> {
  const names = (await readdir(abs, { withFileTypes: true }))
    .filter((d) => (d.isFile() || d.isDirectory()) && !TEMP_NAME.test(d.name) && isValidName(d.name))
    .map((d) => d.name);
  const out: DiskEntry[] = [];
  for (let i = 0; i < names.length; i += STAT_CONCURRENCY) {
    const chunk = names.slice(i, i + STAT_CONCURRENCY);
    // lstat, never stat: an entry swapped for a symlink since readdir is still skipped.
    const stats = await Promise.all(chunk.map((n) => lstat(path.join(abs, n)).catch(() => undefined)));
    chunk.forEach((name, j) => {
      const st = stats[j];
      if (st?.isFile()) out.push({ name, type: 'document', stats: st });
      else if (st?.isDirectory()) out.push({ name, type: 'collection', stats: st });
    });
  }
  return out;
}

/** Throws unless `abs` is still the real directory `before` (not swapped for a symlink meanwhile). */
async function assertSameDirectory(abs: string, before: Stats): Promise<void> {
  const now = await lstat(abs);
  if (now.dev !== before.dev || now.ino !== before.ino || (await realpath(abs)) !== abs) {
    throw new AppError('PATH_ESCAPE', 'directory changed while it was being read');
  }
}

/** Brings the direct children rows of one directory in line; returns how many entries it holds. */
async function syncDirectory(rows: EntryRowsPort, root: string, dir: { uuid: string; path: string }): Promise<number> {
  let disk: DiskEntry[];
  try {
    const { abs, stats } = await inspectInside(root, dir.path);
    if (!stats.isDirectory()) throw new AppError('ENTRY_NOT_FOUND', 'not a directory');
    disk = await readDirectory(abs);
    // readdir and lstat go by path: make sure they read the directory that was checked.
    await assertSameDirectory(abs, stats);
  } catch (err) {
    // Deeper than the OS path limit (made by a local user): unreachable by path, so not listed;
    // its rows stay as they are rather than failing every listing of the tree.
    if ((err as NodeJS.ErrnoException | undefined)?.code === 'ENAMETOOLONG') return 0;
    if (!isGone(err)) throw err;
    // A missing root is an outage (unmounted volume?), never a reason to drop every row.
    if (dir.path === '') throw new AppError('ROOT_UNAVAILABLE', 'the repository root directory is not available');
    await rows.removeChildrenBelow(dir.uuid, dir.path);
    return 0;
  }

  const byName = new Map((await rows.children(dir.uuid)).map((r) => [r.name, r]));
  const removed: SeenChild[] = [];
  const added: DiskEntry[] = [];
  const changed: { row: SyncChild; entry: DiskEntry }[] = [];
  for (const entry of disk) {
    const row = byName.get(entry.name);
    byName.delete(entry.name);
    if (!row) added.push(entry);
    else if (row.type !== entry.type) {
      // A file became a directory or the other way round: a different entry.
      removed.push(row);
      added.push(entry);
    } else if (entry.type === 'document' && contentChanged(row, entry.stats)) changed.push({ row, entry });
  }
  for (const row of byName.values()) removed.push(row);

  // Deletes first: a replaced entry keeps its name, and names are unique per parent.
  if (removed.length > 0) await rows.remove(dir.uuid, removed);
  if (added.length > 0) await rows.add(dir.uuid, added.map((e) => found(dir.path, e)));
  if (changed.length > 0) await rows.updateContent(changed.map(({ row, entry }) => changedContent(row, entry.stats)));
  return disk.length;
}

/** A row for what the disk holds and the table does not. */
function found(parentPath: string, e: DiskEntry): FoundEntry {
  const doc = e.type === 'document';
  return {
    name: e.name,
    type: e.type,
    path: joinRel(parentPath, e.name),
    size: doc ? e.stats.size : null,
    mimeType: doc ? guessMimeType(e.name) : null,
    contentVersion: doc ? fingerprint(e.stats) : null,
    created: msDate(e.stats.birthtimeMs > 0 ? e.stats.birthtimeMs : e.stats.mtimeMs),
    modified: msDate(e.stats.mtimeMs),
  };
}

/** New stat fingerprint of a document; the sha256 is unknown again until the content is read or rewritten. */
const changedContent = (row: Pick<EntryRow, 'uuid' | 'name'>, stats: Stats): ChangedContent => ({
  uuid: row.uuid, size: stats.size, modified: msDate(stats.mtimeMs), contentVersion: fingerprint(stats), mimeType: guessMimeType(row.name),
});

/**
 * `RepositoryBackend.sync`: brings the rows below `collection` in line with
 * the directory (breadth first when `recursive`, up to `SYNC_LIMIT` entries).
 */
export async function syncCollection(rows: EntryRowsPort, root: string, collection: EntryRow, recursive: boolean): Promise<void> {
  if (collection.type !== 'collection' || collection.path === null) return;
  const queue = [{ uuid: collection.uuid, path: collection.path }];
  let seen = 0;
  for (let next = 0; next < queue.length && seen < SYNC_LIMIT; next++) {
    const dir = queue[next]!;
    seen += await syncDirectory(rows, root, dir);
    if (!recursive) break;
    // Re-read rather than trust our own inserts: a concurrent sync's rows may have been kept instead.
    queue.push(...(await rows.childCollections(dir.uuid)));
  }
}

/**
 * Removes the row of an entry whose file is gone, unless the row's path moved
 * meanwhile (`removeAt` waits for a rename or move through the API that holds
 * the row lock). The entry is then checked again at its new place (once).
 */
async function dropUnlessMoved(rows: EntryRowsPort, root: string, entry: EntryRow, path: string, retried: boolean): Promise<EntryRow | undefined> {
  if ((await rows.removeAt(entry.uuid, path)) || retried) return undefined;
  const now = await rows.get(entry.uuid);
  return now && now.path !== path ? refreshEntry(rows, root, now, true) : undefined;
}

/**
 * `RepositoryBackend.refresh`: the row as the file now is, or undefined (row
 * deleted) when the file is gone, has become a symlink or changed type.
 */
export async function refreshEntry(rows: EntryRowsPort, root: string, entry: EntryRow, retried = false): Promise<EntryRow | undefined> {
  if (entry.path === null) return entry;
  let stats: Stats;
  try {
    stats = (await inspectInside(root, entry.path)).stats;
  } catch (err) {
    if (!isGone(err)) throw err;
    if (entry.path === '') throw new AppError('ROOT_UNAVAILABLE', 'the repository root directory is not available');
    return dropUnlessMoved(rows, root, entry, entry.path, retried);
  }
  const type = stats.isFile() ? 'document' : stats.isDirectory() ? 'collection' : undefined;
  if (type !== entry.type) {
    if (entry.path === '') throw new AppError('ROOT_UNAVAILABLE', 'the repository root is not a directory');
    return dropUnlessMoved(rows, root, entry, entry.path, retried);
  }
  if (type === 'collection' || !contentChanged(entry, stats)) return entry;
  const [updated] = await rows.updateContent([changedContent(entry, stats)]);
  return updated;
}
