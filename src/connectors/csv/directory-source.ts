import { randomUUID } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import picomatch from 'picomatch';
import { fileThreads } from '../../threads/file-thread.js';
import { DONE_DIR, ERROR_DIR, moveInto, moveToError, prepareFolder } from '../intake-files/folder-moves.js';
import { openForWriting } from '../intake-files/open-writers.js';
import type { IntakeClaim } from '../ports.js';
import { completeClaim, failClaim, formatOf, ImportRefused, notifyFailure, reasonOf, settleGone, type ImportContext } from './import-file.js';

/** What a file looked like at a look, and since when (monotonic ms) it looked so. */
interface Seen {
  size: number;
  mtimeMs: number;
  ino: string;
  since: number;
}

const identity = (st: Pick<Stats, 'dev' | 'ino'>) => `${st.dev}:${st.ino}`;
const sameFile = (st: Pick<Stats, 'size' | 'mtimeMs' | 'dev' | 'ino'>, s: Pick<IntakeClaim, 'size' | 'mtimeMs' | 'ino'>) => st.size === s.size && st.mtimeMs === s.mtimeMs && identity(st) === s.ino;

/** How importing one file ended, for the run's tally. */
type Outcome = 'imported' | 'repeat' | 'failed' | 'changed' | 'vanished';

/**
 * One directory source of a csv service. A run lists the directory; a file
 * matching the include patterns is imported once its size, mtime and
 * identity stayed the same for `stableMs` across two looks (a new file makes
 * the run wait that long once; one still changing is left for the next run)
 * and, on Linux, nobody holds it open for writing. Files are imported one
 * after another; each ends in done/ (imported, or a repeat of an earlier
 * import) or error/ (with `<name>.error.json`).
 */
export class DirectorySource {
  private readonly seen = new Map<string, Seen>();
  private readonly isIncluded: (name: string) => boolean;
  private prepared = false;

  constructor(private readonly c: ImportContext, private readonly stableMs: number) {
    this.isIncluded = picomatch(c.source.include, { dot: false });
  }

  /** Creates the directory with done/ and error/; false (logged) when that is impossible now. */
  async prepare(): Promise<boolean> {
    try {
      await prepareFolder(this.c.key);
      this.prepared = true;
    } catch (err) {
      this.c.ports.log.error({ err, directory: this.c.key }, 'csv import: cannot use the directory; trying again at the next run');
    }
    return this.prepared;
  }

  /** Finishes what a crash left: each unfinished claim, with its file if it is still the claimed one. */
  async resume(): Promise<void> {
    for (const claim of await this.c.ports.claims.unfinished(this.c.key)) {
      const fh = await open(path.join(this.c.key, claim.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined);
      try {
        if (fh && sameFile(await fh.stat(), claim)) await this.complete(claim, fh);
        else await settleGone(this.c, claim);
      } finally {
        await fh?.close().catch(() => {});
      }
    }
  }

  /** One scheduled run. */
  async run(signal: AbortSignal): Promise<void> {
    if (!this.prepared && !(await this.prepare())) return;
    const first = await this.look();
    await this.takeAll(first.ready, signal);
    if (first.waitMs === undefined || signal.aborted) return;
    await sleep(first.waitMs, undefined, { signal }).catch(() => {});
    if (!signal.aborted) await this.takeAll((await this.look()).ready, signal);
  }

  /** Lists the directory: the stable files, and how long until the next new one may be. */
  private async look(): Promise<{ ready: string[]; waitMs?: number }> {
    const entries = await readdir(this.c.key, { withFileTypes: true });
    // everything but directories: a symlink, FIFO or device is refused by `take` (to error/), never followed or read
    const names = entries.filter((e) => !e.isDirectory() && this.isIncluded(e.name)).map((e) => e.name);
    const listed = new Set(names);
    for (const known of this.seen.keys()) if (!listed.has(known)) this.seen.delete(known);
    const ready: string[] = [];
    let waitMs: number | undefined;
    for (const name of names) {
      const st = await lstat(path.join(this.c.key, name)).catch(() => undefined);
      if (!st) continue;
      const now = performance.now();
      const before = this.seen.get(name);
      if (!before || before.size !== st.size || before.mtimeMs !== st.mtimeMs || before.ino !== identity(st)) {
        this.seen.set(name, { size: st.size, mtimeMs: st.mtimeMs, ino: identity(st), since: now });
        waitMs = Math.min(waitMs ?? Infinity, this.stableMs);
      } else if (now - before.since >= this.stableMs) {
        ready.push(name);
      } else {
        waitMs = Math.min(waitMs ?? Infinity, before.since + this.stableMs - now);
      }
    }
    return { ready, ...(waitMs !== undefined ? { waitMs: Math.max(10, waitMs) } : {}) };
  }

  private async takeAll(names: string[], signal: AbortSignal): Promise<void> {
    if (names.length === 0) return;
    const writing = await openForWriting(new Set(names.map((n) => path.join(this.c.key, n))));
    for (const name of names) {
      if (signal.aborted) return;
      if (writing.has(path.join(this.c.key, name))) continue; // still being written: a later run takes it
      const outcome = await this.take(name);
      if (outcome !== 'changed') this.seen.delete(name);
    }
  }

  /**
   * Imports one stable file exactly once: hashed; a name and content taken
   * before is a repeat (moved to done/, nothing imported); otherwise claimed
   * (the task's tid fixed in the claim) before the task is created.
   */
  private async take(name: string): Promise<Outcome> {
    const { c } = this;
    const seen = this.seen.get(name)!;
    let fh: FileHandle;
    try {
      // never follows a symlink: the link itself goes to error/
      fh = await open(path.join(c.key, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return 'vanished';
      if (code === 'ELOOP') return this.fail(name, undefined, new ImportRefused('SYMLINK_REFUSED', 'symbolic links are not imported (the link, not its target, moved here)'));
      if (code === 'EACCES' || code === 'EPERM') return this.fail(name, undefined, new ImportRefused('UNREADABLE', `the file cannot be read: ${code}`));
      throw err;
    }
    try {
      // read and hashed by a file thread, with its fstat before and after the read (src/threads/file-thread.ts)
      const read = await fileThreads.hash(fh.fd);
      const st = read.before;
      if (!st.file) return await this.fail(name, undefined, new ImportRefused('NOT_A_FILE', 'not a regular file'));
      if (!sameFile(st, seen)) return 'changed';
      if (st.size === 0) return await this.fail(name, undefined, new ImportRefused('EMPTY_FILE', 'the file is empty (0 bytes)'));
      if (!read.after || !sameFile(read.after, seen) || read.size !== st.size) return 'changed';
      const sha256 = read.sha256!;
      if (await c.ports.claims.taken(c.key, name, sha256)) {
        const moved = await this.moveIfSame(name, seen.ino, `repeat ${sha256.slice(0, 8)}`);
        c.ports.log.info({ file: name, directory: c.key, sha256, movedTo: moved && path.join(DONE_DIR, moved) },
          'csv import: a repeat (this name and content were imported before); moved to done/ without a new task');
        return 'repeat';
      }
      const facts = { source: c.key, name, size: st.size, mtimeMs: st.mtimeMs, ino: seen.ino, sha256, docUuid: null };
      const first = await c.ports.claims.claim({ ...facts, tid: randomUUID() });
      let claim = first.claim;
      if (!first.fresh && !(claim.ino === seen.ino && claim.sha256 === sha256 && claim.size === st.size)) {
        // an unfinished claim of an earlier file at this name (replaced while the intake was down): settle it first
        await settleGone(c, claim);
        ({ claim } = await c.ports.claims.claim({ ...facts, tid: randomUUID() }));
      }
      return await this.complete(claim, fh);
    } finally {
      await fh.close().catch(() => {});
    }
  }

  /** Task, source to done/, claim finished; or error/ when refused. */
  private async complete(claim: IntakeClaim, fh: FileHandle): Promise<Outcome> {
    const { c } = this;
    const format = formatOf(c.source, claim.name);
    if (!format) return this.fail(claim.name, claim, new ImportRefused('UNKNOWN_FORMAT', 'neither the name\'s extension nor the source\'s `format` says whether it is CSV or RList'));
    const result = await completeClaim(c, claim, format, () => fh.createReadStream({ start: 0, autoClose: false }), async () => sameFile(await fh.stat(), claim));
    if (result.outcome === 'refused') return this.fail(claim.name, claim, result.err);
    if (result.outcome === 'changed') return 'changed';
    // the source last: once it is gone, only the claim says what became of it
    const moved = await this.moveIfSame(claim.name, claim.ino!, claim.id);
    await c.ports.claims.finish(claim.id, 'done');
    c.ports.log.info({ file: claim.name, directory: c.key, size: claim.size, sha256: claim.sha256, service: c.source.task.service, tid: claim.tid, movedTo: moved && path.join(DONE_DIR, moved) },
      'csv import: file imported');
    return 'imported';
  }

  /** Moves the file to done/ when it is still the one looked at (a new file dropped at its name meanwhile stays). */
  private async moveIfSame(name: string, ino: string, tag: string): Promise<string | undefined> {
    return moveInto(this.c.key, name, DONE_DIR, tag, ino);
  }

  /** A refused file: its claim failed (its task removed), then the file to error/ with its reason, counted and logged. */
  private async fail(name: string, claim: IntakeClaim | undefined, err: ImportRefused): Promise<Outcome> {
    const { c } = this;
    const reason = reasonOf(err);
    if (claim) await failClaim(c, claim, reason);
    else await notifyFailure(c, name, reason);
    const moved = await moveToError(c.key, name, claim?.id ?? randomUUID().slice(0, 8), reason);
    c.ports.metrics.failed(err.code);
    c.ports.log.warn({ file: name, directory: c.key, code: err.code, reason: err.message, ...err.where, movedTo: moved && path.join(ERROR_DIR, moved) },
      'csv import: file failed');
    return 'failed';
  }
}
