import type { Stats } from 'node:fs';
import { lstat, mkdir, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { EntryRow, RepositoryBackend, StagedContent, WrittenContent } from '../connector.js';
import { mappingFsErrors, withFsErrors } from './fs-errors.js';
import { AppError, statusOf } from '../../errors/app-error.js';
import { meteredHash } from '../../blobs/metered-hash.js';
import { syncDir } from '../../blobs/dir-sync.js';
import { partFileName } from '../../blobs/part-files.js';
import { CREATE_FLAGS, READ_FLAGS, inspectInside, joinRel, openNoFollow, resolveParent, splitRelPath, validateName } from './safe-path.js';
import { refreshEntry, syncCollection } from './filesystem-sync.js';

const code = (err: unknown): string | undefined => (err as NodeJS.ErrnoException | undefined)?.code;
const isNotFound = (err: unknown): boolean => err instanceof AppError && statusOf(err) === 404;

/** The row's path; rows of this connector always have one. */
export function relPathOf(entry: EntryRow): string {
  if (entry.path === null) throw new AppError('ENTRY_NOT_FOUND', `entry ${entry.uuid} has no file path`, { uuid: entry.uuid });
  return entry.path;
}

const isRoot = (entry: EntryRow): boolean => entry.parent === null || entry.path === '';
const parentRel = (rel: string): string => (rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '');
const nameExists = (rel: string) => new AppError('NAME_EXISTS', `"${rel}" already exists`, { path: rel });

/** Throws NAME_EXISTS when `abs` exists, unless it is `source` itself (a case-only rename). */
async function assertFree(abs: string, rel: string, source?: { dev: number; ino: number }): Promise<void> {
  const existing = await lstat(abs).catch((err: unknown) => {
    if (code(err) === 'ENOENT') return undefined;
    throw err;
  });
  if (existing && !(source && existing.dev === source.dev && existing.ino === source.ino)) throw nameExists(rel);
}

/** Streams `source` into `sink`, hashing and counting; 413 past `maxBytes` (0 = unlimited). */
async function meteredWrite(source: Readable, sink: NodeJS.WritableStream, maxBytes: number): Promise<{ size: number; sha256: string }> {
  const meter = meteredHash(maxBytes);
  await pipeline(source, meter.stream, sink);
  return meter.result();
}

/**
 * A repository backend over the directory tree at `root` (an absolute, real
 * path). Every path goes through `safe-path.ts`; rows carry the relative path.
 * Not atomic against a concurrent local user renaming directories inside the
 * root (Node has no openat/renameat2): the O_NOFOLLOW opens and descriptor
 * checks keep reads and writes inside the root, but a rename may race.
 */
export function filesystemBackend(root: string): RepositoryBackend {
  /** Where a document's content goes: its path, checked to be a file or nothing, never a symlink. */
  async function placeFor(entry: EntryRow): Promise<string> {
    const rel = relPathOf(entry);
    const abs = await resolveParent(root, rel);
    const existing = await lstat(abs).catch(() => undefined);
    if (existing?.isSymbolicLink()) throw new AppError('PATH_ESCAPE', `path "${rel}" is a symlink`, { path: rel });
    if (existing && !existing.isFile()) throw new AppError('NOT_A_FILE', `"${rel}" is not a file`);
    return abs;
  }

  const backend: RepositoryBackend = {
    sync: (rows, collection, recursive) => syncCollection(rows, root, collection, recursive),
    refresh: (rows, entry) => refreshEntry(rows, root, entry),

    async create(entry, parent) {
      validateName(entry.name);
      const rel = joinRel(relPathOf(parent), entry.name);
      const parentInfo = await inspectInside(root, relPathOf(parent));
      if (!parentInfo.stats.isDirectory()) throw new AppError('NOT_A_DIRECTORY', `"${parent.path}" is not a directory`);
      const abs = await resolveParent(root, rel);
      try {
        if (entry.type === 'collection') await mkdir(abs);
        else await (await openNoFollow(root, abs, CREATE_FLAGS)).close();
      } catch (err) {
        if (code(err) === 'EEXIST') throw nameExists(rel);
        throw err;
      }
      return { path: rel };
    },

    async rename(entry, newName) {
      validateName(newName);
      if (isRoot(entry)) throw new AppError('ROOT_PROTECTED', 'the repository root cannot be renamed');
      const rel = relPathOf(entry);
      const target = joinRel(parentRel(rel), newName);
      if (target === rel) return { path: rel };
      const source = await inspectInside(root, rel);
      const abs = await resolveParent(root, target);
      await assertFree(abs, target, source.stats);
      await rename(source.abs, abs);
      return { path: target };
    },

    async move(entry, target) {
      if (isRoot(entry)) throw new AppError('ROOT_PROTECTED', 'the repository root cannot be moved');
      const rel = relPathOf(entry);
      const targetRel = relPathOf(target);
      // Paths hold no symlinks (safe-path refuses them), so the string test is exact.
      if (targetRel === rel || targetRel.startsWith(`${rel}/`)) {
        throw new AppError('MOVE_INTO_SELF', `cannot move "${rel}" into itself`, { path: rel, target: targetRel });
      }
      const dest = joinRel(targetRel, entry.name);
      if (dest === rel) return { path: rel };
      const targetInfo = await inspectInside(root, targetRel);
      if (!targetInfo.stats.isDirectory()) throw new AppError('NOT_A_DIRECTORY', `"${targetRel}" is not a directory`);
      const source = await inspectInside(root, rel);
      const abs = await resolveParent(root, dest);
      await assertFree(abs, dest);
      await rename(source.abs, abs);
      return { path: dest };
    },

    async copy(entry, target, name) {
      validateName(name);
      const dest = joinRel(relPathOf(target), name);
      const source = await inspectInside(root, relPathOf(entry));
      if (!source.stats.isFile()) throw new AppError('NOT_A_FILE', `"${entry.path}" is not a file`);
      const abs = await resolveParent(root, dest);
      // Streamed between two O_NOFOLLOW descriptors instead of copyFile(COPYFILE_EXCL):
      // copyFile takes paths and would follow a symlink swapped in for the source.
      const input = await openNoFollow(root, source.abs, READ_FLAGS);
      let output: FileHandle;
      let stats: Stats;
      try {
        stats = await input.stat();
        if (!stats.isFile()) throw new AppError('NOT_A_FILE', `"${entry.path}" is not a file`);
        output = await openNoFollow(root, abs, CREATE_FLAGS);
      } catch (err) {
        await input.close();
        if (code(err) === 'EEXIST') throw nameExists(dest);
        throw err;
      }
      try {
        // writeFile(handle) leaves the handle open for utimes; a stream over it would hold it past close().
        await writeFile(output, input.createReadStream());
        // Keep the source's mtime (like cp -p) so the copy matches the content version the service
        // copies from the source row. Seconds as a double lose sub-microsecond bits: aim at the
        // middle of the millisecond so the whole-ms fingerprint survives the rounding.
        await output.utimes(stats.atime, (Math.floor(stats.mtimeMs) + 0.5) / 1000);
      } catch (err) {
        await rm(abs, { force: true });
        throw err;
      } finally {
        await output.close();
      }
      return { path: dest };
    },

    async remove(entry) {
      if (isRoot(entry)) throw new AppError('ROOT_PROTECTED', 'the repository root cannot be deleted');
      const rel = relPathOf(entry);
      splitRelPath(rel); // '..' or absolute: a forged row, refused loudly
      let abs: string;
      try {
        abs = await resolveParent(root, rel);
      } catch (err) {
        // Gone with its parent, or a directory on the way is now a symlink: either way nothing
        // of this entry is left inside the root, and the row may go without touching anything.
        if (isNotFound(err) || (err instanceof AppError && err.code === 'PATH_ESCAPE')) return;
        throw err;
      }
      // rm does not follow symlinks: a link in the way is unlinked, never its target.
      await rm(abs, { recursive: true, force: true });
    },

    async writeContent(entry, source, maxBytes): Promise<WrittenContent> {
      const staged = await backend.stageContent!(entry, source, maxBytes);
      try {
        await staged.commit();
      } finally {
        await staged.discard();
      }
      return { size: staged.size, sha256: staged.sha256, path: relPathOf(entry) };
    },

    async stageContent(entry, source, maxBytes): Promise<StagedContent> {
      if (entry.type !== 'document') throw new AppError('NOT_A_FILE', 'only documents have content');
      // Checked now so a doomed upload is refused before its bytes are read, and again at commit.
      await placeFor(entry);
      // In the root, not next to the file: a rename or move of the file or of a directory above it
      // while the bytes arrive cannot carry the temp file away; the root holds the whole tree, so
      // the final rename stays on one file system and is atomic.
      const tmp = path.join(root, partFileName('.wcr-'));
      const handle = await openNoFollow(root, tmp, CREATE_FLAGS);
      let written: { size: number; sha256: string };
      try {
        // `flush`: the bytes are on disk before the file is closed; the rename's directory is synced at commit
        written = await meteredWrite(source, handle.createWriteStream({ highWaterMark: 1024 * 1024, flush: true }), maxBytes);
      } catch (err) {
        await handle.close().catch(() => {});
        await rm(tmp, { force: true });
        throw err;
      }
      let placed = false;
      return {
        ...written,
        // rename replaces the directory entry itself; a symlink swapped in meanwhile is replaced, not followed.
        commit: (current = entry) => mappingFsErrors(async () => {
          const final = await placeFor(current);
          await rename(tmp, final);
          placed = true;
          await syncDir(path.dirname(final));
        }),
        discard: async () => {
          if (!placed) await rm(tmp, { force: true });
        },
      };
    },

    async openContent(entry, range) {
      if (entry.type !== 'document') return undefined;
      let abs: string;
      try {
        abs = (await inspectInside(root, relPathOf(entry))).abs;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
      let handle: FileHandle;
      try {
        handle = await openNoFollow(root, abs, READ_FLAGS);
      } catch (err) {
        if (code(err) === 'ENOENT') return undefined;
        throw err;
      }
      if (!(await handle.stat()).isFile()) {
        await handle.close();
        return undefined;
      }
      const opts = { highWaterMark: 256 * 1024 };
      return handle.createReadStream(range ? { ...opts, start: range.start, end: range.end } : opts);
    },

    async contentPath(entry) {
      if (entry.type !== 'document') return undefined;
      try {
        const { abs, stats } = await inspectInside(root, relPathOf(entry));
        return stats.isFile() ? abs : undefined;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
  };
  return withFsErrors(backend);
}
