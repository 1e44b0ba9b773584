import { randomUUID } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { EntryRow } from '../connector.js';
import type { Sql } from '../../storage/driver/database.js';
import { AppError, statusOf } from '../../errors/app-error.js';
import { TEMP_NAME, inspectInside, isValidName, joinRel } from './safe-path.js';

/** A recursive sync stops descending once it has seen this many entries. */
export const SYNC_LIMIT = 100_000;
// Rows per bulk statement: keeps each parameter array a few hundred KB.
const BATCH = 5_000;
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

/**
 * After a rename or move of a collection, points the `path` of every row below
 * it (of service `sid`) at the new place. Returns the number of rows updated.
 * The prefix test uses `left()`, not LIKE, so '%' and '_' in names are literal.
 */
export async function rewriteDescendantPaths(tx: Sql, sid: string, oldPath: string, newPath: string): Promise<number> {
  if (oldPath === '') throw new Error('the root has no new path');
  const res = await tx.query(
    `UPDATE entries SET path = $3 || substr(path, length($2) + 1)
      WHERE sid = $1 AND path IS NOT NULL AND left(path, length($2) + 1) = $2 || '/'`,
    [sid, oldPath, newPath],
  );
  return res.rowCount;
}

type ChildRow = Pick<EntryRow, 'uuid' | 'name' | 'type' | 'size' | 'modified' | 'content_version'>;
interface DiskEntry {
  name: string;
  type: 'document' | 'collection';
  stats: Stats;
}

const iso = (ms: number): string => new Date(Math.floor(ms)).toISOString();
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
async function syncDirectory(tx: Sql, root: string, sid: string, dir: { uuid: string; path: string }): Promise<number> {
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
    // Only rows still below the old path: a collection renamed through the API holds its rows'
    // locks while the disk already shows the new name; once it commits, its rows no longer match.
    await tx.query(
      `DELETE FROM entries WHERE sid = $1 AND parent = $2 AND left(path, length($3) + 1) = $3 || '/'`,
      [sid, dir.uuid, dir.path],
    );
    return 0;
  }

  const { rows } = await tx.query<ChildRow>(
    'SELECT uuid, name, type, size, modified, content_version FROM entries WHERE sid = $1 AND parent = $2',
    [sid, dir.uuid],
  );
  const byName = new Map(rows.map((r) => [r.name, r]));
  const removed: ChildRow[] = [];
  const added: DiskEntry[] = [];
  const changed: { row: ChildRow; entry: DiskEntry }[] = [];
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
  for (let i = 0; i < removed.length; i += BATCH) {
    const chunk = removed.slice(i, i + BATCH);
    // Only rows that still have the name and type seen: an entry renamed through the API meanwhile
    // (disk renamed, row locked until COMMIT) is re-checked against its new row and kept.
    await tx.query(
      `DELETE FROM entries e USING unnest($2::uuid[], $3::text[], $4::text[]) AS x(uuid, name, type)
        WHERE e.sid = $1 AND e.parent = $5 AND e.uuid = x.uuid AND e.name = x.name AND e.type = x.type`,
      [sid, chunk.map((r) => r.uuid), chunk.map((r) => r.name), chunk.map((r) => r.type), dir.uuid],
    );
  }
  for (let i = 0; i < added.length; i += BATCH) {
    const chunk = added.slice(i, i + BATCH);
    const doc = (e: DiskEntry) => e.type === 'document';
    // ON CONFLICT DO NOTHING: a concurrent listing of the same directory may insert the same names.
    await tx.query(
      `INSERT INTO entries (uuid, sid, parent, name, type, path, size, mime_type, content_version, created, modified)
       SELECT x.uuid, $1, $2::uuid, x.name, x.type, x.path, x.size, x.mime, x.cv, x.created, x.modified
         FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[],
                     $10::timestamptz[], $11::timestamptz[])
           AS x(uuid, name, type, path, size, mime, cv, created, modified)
       ON CONFLICT DO NOTHING`,
      [
        sid, dir.uuid,
        chunk.map(() => randomUUID()),
        chunk.map((e) => e.name),
        chunk.map((e) => e.type),
        chunk.map((e) => joinRel(dir.path, e.name)),
        chunk.map((e) => (doc(e) ? e.stats.size : null)),
        chunk.map((e) => (doc(e) ? guessMimeType(e.name) : null)),
        chunk.map((e) => (doc(e) ? fingerprint(e.stats) : null)),
        chunk.map((e) => iso(e.stats.birthtimeMs > 0 ? e.stats.birthtimeMs : e.stats.mtimeMs)),
        chunk.map((e) => iso(e.stats.mtimeMs)),
      ],
    );
  }
  for (let i = 0; i < changed.length; i += BATCH) {
    await updateChanged(tx, sid, changed.slice(i, i + BATCH));
  }
  return disk.length;
}

/** Records new stat fingerprints; the sha256 is unknown again until the content is read or rewritten. */
async function updateChanged(tx: Sql, sid: string, items: { row: Pick<EntryRow, 'uuid' | 'name'>; entry: { stats: Stats } }[]): Promise<EntryRow[]> {
  const { rows } = await tx.query<EntryRow>(
    `UPDATE entries e SET size = x.size, modified = x.modified, content_version = x.cv, sha256 = NULL,
            mime_type = COALESCE(e.mime_type, x.mime)
       FROM unnest($2::uuid[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[]) AS x(uuid, size, modified, cv, mime)
      WHERE e.sid = $1 AND e.uuid = x.uuid
      RETURNING e.*`,
    [
      sid,
      items.map((c) => c.row.uuid),
      items.map((c) => c.entry.stats.size),
      items.map((c) => iso(c.entry.stats.mtimeMs)),
      items.map((c) => fingerprint(c.entry.stats)),
      items.map((c) => guessMimeType(c.row.name)),
    ],
  );
  return rows;
}

/**
 * `RepositoryBackend.sync`: brings the rows below `collection` in line with
 * the directory (breadth first when `recursive`, up to `SYNC_LIMIT` entries).
 */
export async function syncCollection(tx: Sql, root: string, collection: EntryRow, recursive: boolean): Promise<void> {
  if (collection.type !== 'collection' || collection.path === null) return;
  const queue = [{ uuid: collection.uuid, path: collection.path }];
  let seen = 0;
  for (let next = 0; next < queue.length && seen < SYNC_LIMIT; next++) {
    const dir = queue[next]!;
    seen += await syncDirectory(tx, root, collection.sid, dir);
    if (!recursive) break;
    // Re-read rather than trust our own inserts: ON CONFLICT may have kept a concurrent sync's rows.
    const { rows } = await tx.query<{ uuid: string; path: string }>(
      `SELECT uuid, path FROM entries WHERE sid = $1 AND parent = $2 AND type = 'collection' AND path IS NOT NULL`,
      [collection.sid, dir.uuid],
    );
    queue.push(...rows);
  }
}

/**
 * Deletes the row of an entry whose file is gone, unless the row's path moved
 * meanwhile: a rename or move through the API holds the row lock while the
 * disk already shows the new place, and this DELETE waits for it, then finds
 * the new path. The entry is then checked again at its new place (once).
 */
async function dropUnlessMoved(tx: Sql, root: string, entry: EntryRow, retried: boolean): Promise<EntryRow | undefined> {
  const { rowCount } = await tx.query('DELETE FROM entries WHERE sid = $1 AND uuid = $2 AND path = $3', [entry.sid, entry.uuid, entry.path]);
  if (rowCount > 0 || retried) return undefined;
  const { rows } = await tx.query<EntryRow>('SELECT * FROM entries WHERE sid = $1 AND uuid = $2', [entry.sid, entry.uuid]);
  const now = rows[0];
  return now && now.path !== entry.path ? refreshEntry(tx, root, now, true) : undefined;
}

/**
 * `RepositoryBackend.refresh`: the row as the file now is, or undefined (row
 * deleted) when the file is gone, has become a symlink or changed type.
 */
export async function refreshEntry(tx: Sql, root: string, entry: EntryRow, retried = false): Promise<EntryRow | undefined> {
  if (entry.path === null) return entry;
  let stats: Stats;
  try {
    stats = (await inspectInside(root, entry.path)).stats;
  } catch (err) {
    if (!isGone(err)) throw err;
    if (entry.path === '') throw new AppError('ROOT_UNAVAILABLE', 'the repository root directory is not available');
    return dropUnlessMoved(tx, root, entry, retried);
  }
  const type = stats.isFile() ? 'document' : stats.isDirectory() ? 'collection' : undefined;
  if (type !== entry.type) {
    if (entry.path === '') throw new AppError('ROOT_UNAVAILABLE', 'the repository root is not a directory');
    return dropUnlessMoved(tx, root, entry, retried);
  }
  if (type === 'collection' || !contentChanged(entry, stats)) return entry;
  const [updated] = await updateChanged(tx, entry.sid, [{ row: entry, entry: { stats } }]);
  return updated;
}
