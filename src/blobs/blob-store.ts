import { createReadStream, createWriteStream, readFile, type ReadStream } from 'node:fs';
import { mkdir, rename, rm, stat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { meteredHash } from './metered-hash.js';
import { syncDir } from './dir-sync.js';
import { fileThreads } from '../threads/file-thread.js';
import { partFileName, sweepPartDir, type SweepResult } from './part-files.js';

export interface BlobInfo {
  sha256: string;
  size: number;
}

const SHA256 = /^[0-9a-f]{64}$/;
/** Blobs up to this size are read whole by `reader` (one chunk of a file stream's size). */
const SMALL_BLOB = 256 * 1024;

/**
 * Content-addressed store under `<root>`: blobs live at `ab/cd/<sha256>`.
 * Writes stream through a hash into a temporary file that is renamed into place
 * once complete, so a crash never leaves a partial blob under its final name and
 * identical content is stored once. Nothing is held in memory. A blob is
 * durable when `put` resolves: the file is synced before the rename and its
 * directory after it (concurrent writers share the directory syncs), so a row
 * committed after `put` never names bytes a power loss took.
 */
export class BlobStore {
  private readonly tmpDir: string;

  constructor(readonly root: string) {
    this.tmpDir = path.join(root, 'tmp');
  }

  /**
   * Creates the directories and removes the part files that killed writers
   * left in `tmp/` (see part-files.ts: live writers of other processes sharing
   * the directory are spared). Returns what it removed, for the log.
   */
  async init(): Promise<SweepResult> {
    await mkdir(this.tmpDir, { recursive: true });
    return this.sweepParts();
  }

  /** Removes abandoned part files from `tmp/` (start-up and housekeeping). */
  sweepParts(): Promise<SweepResult> {
    return sweepPartDir(this.tmpDir);
  }

  pathOf(sha256: string): string {
    if (!SHA256.test(sha256)) throw new Error(`not a sha256: ${sha256}`);
    return path.join(this.root, sha256.slice(0, 2), sha256.slice(2, 4), sha256);
  }

  /** Streams `source` into the store; rejects with 413 past `maxBytes` (0 = unlimited). */
  async put(source: Readable, maxBytes = 0): Promise<BlobInfo> {
    const tmp = path.join(this.tmpDir, partFileName());
    const meter = meteredHash(maxBytes);
    try {
      // a large buffer lets the file stream batch socket chunks into one writev
      // `flush`: the bytes are on disk before the file is closed (and renamed into place)
      await pipeline(source, meter.stream, createWriteStream(tmp, { flags: 'wx', highWaterMark: 1024 * 1024, flush: true }));
      const { sha256, size } = meter.result();
      const final = this.pathOf(sha256);
      // rename is atomic; an existing blob with this hash already holds the same bytes.
      // The fan-out directory usually exists: created only when the rename says it is missing (one system call less per blob)
      const dir = path.dirname(final);
      await rename(tmp, final).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
        await mkdir(dir, { recursive: true });
        await rename(tmp, final);
        // new fan-out directories: their own entries in the levels above must last too
        await syncDir(path.dirname(dir));
        await syncDir(this.root);
      });
      await syncDir(dir);
      return { sha256, size };
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
  }

  /**
   * `put` of an open file (`fd`, read from its start; the caller keeps it
   * open until this resolves): the same part file, hash, `fsync`s and rename,
   * done in a file thread (file-thread.ts) with blocking system calls instead
   * of a file stream's dozen asynchronous ones on the main thread. The intake
   * path: one small file costs the main thread one message each way.
   */
  async putFile(fd: number, maxBytes = 0): Promise<BlobInfo> {
    return fileThreads.put(fd, this.root, path.join(this.tmpDir, partFileName()), maxBytes);
  }

  async has(sha256: string): Promise<boolean> {
    try {
      await stat(this.pathOf(sha256));
      return true;
    } catch {
      return false;
    }
  }

  /** Opens a blob for reading, or undefined when it is not stored. */
  async open(sha256: string, range?: { start: number; end: number }): Promise<ReadStream | undefined> {
    const file = this.pathOf(sha256);
    try {
      await stat(file);
    } catch {
      return undefined;
    }
    return createReadStream(file, range ? { start: range.start, end: range.end, highWaterMark: 256 * 1024 } : { highWaterMark: 256 * 1024 });
  }

  /**
   * The blob's bytes as a stream for a reader that knows its size (the
   * dispatch engine). Up to `SMALL_BLOB` bytes are read in one go when the
   * stream is first read (one `readFile`, one chunk) instead of through a file
   * stream's open, reads and close; larger blobs stream. A missing blob
   * errors the stream (ENOENT), as a file stream does.
   */
  reader(sha256: string, size: number): Readable {
    const file = this.pathOf(sha256);
    if (size > SMALL_BLOB) return createReadStream(file, { highWaterMark: 256 * 1024 });
    let started = false;
    return new Readable({
      read() {
        if (started) return;
        started = true;
        readFile(file, (err, bytes) => {
          if (err) this.destroy(err);
          else {
            this.push(bytes);
            this.push(null);
          }
        });
      },
    });
  }

  async remove(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }

  /**
   * Deletes blobs that `isReferenced` says nobody uses and that are older than
   * `graceMs` (a blob written just now may belong to a row not yet committed).
   */
  async collectGarbage(isReferenced: (sha256s: string[]) => Promise<Set<string>>, graceMs = 3_600_000): Promise<number> {
    let removed = 0;
    const cutoff = Date.now() - graceMs;
    for (const a of await readdir(this.root).catch(() => [] as string[])) {
      if (!/^[0-9a-f]{2}$/.test(a)) continue;
      for (const b of await readdir(path.join(this.root, a)).catch(() => [] as string[])) {
        const dir = path.join(this.root, a, b);
        const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => SHA256.test(n));
        if (names.length === 0) continue;
        const used = await isReferenced(names);
        for (const name of names) {
          if (used.has(name)) continue;
          const info = await stat(path.join(dir, name)).catch(() => undefined);
          if (info && info.mtimeMs < cutoff) {
            await rm(path.join(dir, name), { force: true });
            removed += 1;
          }
        }
      }
    }
    return removed;
  }
}
