import { constants, watch as nativeWatch, type FSWatcher as NativeWatcher } from 'node:fs';
import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { watch, type FSWatcher } from 'chokidar';
import picomatch from 'picomatch';
import { fileThreads } from '../../threads/file-thread.js';
import { DONE_DIR, ERROR_DIR, prepareFolder } from '../intake-files/folder-moves.js';
import { openForWriting } from '../intake-files/open-writers.js';
import type { HotFolderOptions } from './options.js';
import { identity, isLeaseLost, resumeClaim, takeFile, type Seen, type TakeContext, type TakeResult } from './take-file.js';

/** A file seen in the folder and not yet taken. */
interface Pending {
  /** Last size, mtime and identity read; undefined until the first look. */
  seen?: Seen;
  /** When `seen` was first read as it is (monotonic ms): stable once this is `stableMs` old. */
  since: number;
  /** When to look again. */
  due: number;
  /** Being taken now. */
  busy: boolean;
  /** Passing failures in a row (backoff). */
  failures: number;
}

/** Files looked at in one pass (a burst of many thousands is worked through pass by pass). */
const PASS_LIMIT = 5000;
/** Names looked at (lstat) by a file thread in one request. */
const STAT_BATCH = 1000;
/** Longest pause between retries of a file that hit a passing problem. */
const MAX_BACKOFF_MS = 60_000;
/** How often finished claims older than `keepDays` are deleted. */
const PRUNE_EVERY_MS = 3_600_000;

/** The status of a folder as its service's state records it (`folder/<path>`), for logs and `/readyz`. */
export interface FolderStatus {
  ok: boolean;
  reason?: string;
  at: string;
}

/**
 * One watched folder of a hot folder service: chokidar events and a full
 * listing every `rescanMs` bring names in; a file is taken once its size,
 * mtime and identity stayed the same for `stableMs` and (on Linux) nobody
 * holds it open for writing; up to `concurrency` files are taken at once
 * (`take-file.ts`). Unfinished claims a crash left are finished first. A
 * folder that cannot be prepared (missing parent, not writable) is reported
 * in the log and the service's state, and tried again at every rescan.
 */
export class FolderWatch {
  private readonly pending = new Map<string, Pending>();
  private readonly isIncluded: (name: string) => boolean;
  private readonly isExcluded: (name: string) => boolean;
  private readonly ignoredDirs = new Set<string>();
  private watcher?: FSWatcher;
  private native?: NativeWatcher;
  private tickTimer?: NodeJS.Timeout;
  private rescanTimer?: NodeJS.Timeout;
  private prepared = false;
  private lastProblem?: string;
  private lastPrune = 0;
  private running = 0;
  private readonly queue: (() => Promise<void>)[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private ticking?: Promise<void>;
  private signal?: AbortSignal;

  constructor(private readonly c: TakeContext, private readonly o: HotFolderOptions) {
    this.isIncluded = picomatch(c.folder.include, { dot: false, nocase: false });
    this.isExcluded = picomatch(c.folder.exclude, { dot: true });
  }

  get description(): string {
    return this.c.dir;
  }

  /** Starts watching; resolves at once even when the folder cannot be used yet (it is retried). */
  async start(signal: AbortSignal): Promise<void> {
    this.signal = signal;
    await this.prepare();
    this.rescanTimer = setInterval(() => void this.rescan(), this.o.rescanMs);
    this.tickTimer = setInterval(() => this.tick(), Math.min(500, Math.max(50, Math.floor(this.o.stableMs / 4))));
  }

  /** Stops watching and waits for the files being taken (nothing new starts). */
  async stop(): Promise<void> {
    clearInterval(this.rescanTimer);
    clearInterval(this.tickTimer);
    this.queue.length = 0;
    await this.closeWatchers();
    await this.ticking;
    await Promise.allSettled([...this.inFlight]);
  }

  private async closeWatchers(): Promise<void> {
    await this.watcher?.close().catch(() => {});
    this.watcher = undefined;
    this.native?.close();
    this.native = undefined;
  }

  private get stopping(): boolean {
    return this.signal?.aborted ?? true;
  }

  private async prepare(): Promise<void> {
    const { dir } = this.c;
    try {
      await prepareFolder(dir);
      await access(dir, constants.R_OK | constants.W_OK | constants.X_OK);
    } catch (err) {
      const reason = `cannot use the hot folder ${dir}: ${(err as Error).message}`;
      if (reason !== this.lastProblem) this.c.ports.log.error({ folder: dir, err }, `${reason}; trying again every ${this.o.rescanMs} ms`);
      this.lastProblem = reason;
      await this.report({ ok: false, reason, at: new Date().toISOString() });
      return;
    }
    if (this.lastProblem) this.c.ports.log.info({ folder: dir }, 'hot folder usable again');
    this.lastProblem = undefined;
    await this.report({ ok: true, at: new Date().toISOString() });
    // what a crash left half-done goes first, each under its file's name (unless being taken now:
    // a folder prepared again after it went away keeps what it had in hand)
    for (const claim of await this.c.ports.claims.unfinished(dir)) {
      if (this.pending.get(claim.name)?.busy) continue;
      this.pending.set(claim.name, { since: 0, due: Infinity, busy: true, failures: 0 });
      this.submit(claim.name, () => resumeClaim(this.c, claim));
    }
    await this.closeWatchers(); // prepared again (the folder went away and came back): one watcher, not two
    const onError = (err: unknown) => this.c.ports.log.warn({ err, folder: dir }, 'hot folder watcher error; the rescan covers what it missed');
    if (this.o.usePolling) {
      // network shares: chokidar's polling (no native events reach a client of a share)
      this.watcher = watch(dir, {
        depth: 0, ignoreInitial: true, persistent: true, usePolling: true, interval: this.o.pollMs, followSymlinks: false,
        ignored: (p: string) => path.dirname(p) === dir && (path.basename(p) === DONE_DIR || path.basename(p) === ERROR_DIR),
      });
      const onEvent = (p: string) => {
        if (path.dirname(p) === dir) this.notice(path.basename(p));
      };
      this.watcher.on('add', onEvent).on('change', onEvent).on('error', onError);
    } else {
      // local folders: one native watch of the directory (inotify), names straight from its events
      this.native = nativeWatch(dir, (event, name) => {
        if (name) this.notice(name);
      });
      this.native.on('error', onError);
    }
    this.prepared = true;
    await this.scan();
  }

  private async report(status: FolderStatus): Promise<void> {
    await this.c.ports.state.put(`folder/${this.c.dir}`, status)
      .catch((err: unknown) => this.c.ports.log.warn({ err }, 'hot folder status not recorded'));
  }

  private async rescan(): Promise<void> {
    if (this.stopping) return;
    try {
      if (!this.prepared) await this.prepare();
      else await this.scan();
      if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
        this.lastPrune = Date.now();
        const removed = await this.c.ports.claims.prune(this.o.keepDays);
        if (removed > 0) this.c.ports.log.info({ removed }, 'hot folder: old claims deleted');
      }
    } catch (err) {
      this.c.ports.log.warn({ err, folder: this.c.dir }, 'hot folder rescan failed; trying again later');
    }
  }

  /** Lists the folder: every name not yet known is looked at. */
  private async scan(): Promise<void> {
    const entries = await readdir(this.c.dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
      // the folder went away: prepared again at the next rescan
      if (err.code === 'ENOENT') this.prepared = false;
      throw err;
    });
    for (const e of entries) {
      if (e.isDirectory()) {
        if (e.name !== DONE_DIR && e.name !== ERROR_DIR) this.ignoreDir(e.name);
        continue;
      }
      this.notice(e.name);
    }
  }

  private ignoreDir(name: string): void {
    if (this.ignoredDirs.has(name)) return;
    this.ignoredDirs.add(name);
    this.c.ports.log.info({ folder: this.c.dir, directory: name }, 'hot folder: directories are not taken (only files at the top of the folder); left where it is');
  }

  /** A name the watcher or a listing reported: looked at by the next pass. */
  private notice(name: string): void {
    if (this.stopping || !this.matches(name)) return;
    const p = this.pending.get(name);
    if (p) {
      if (!p.busy && p.failures === 0) p.due = Math.min(p.due, performance.now());
      return;
    }
    const now = performance.now();
    this.pending.set(name, { since: now, due: now, busy: false, failures: 0 });
  }

  private matches(name: string): boolean {
    return this.isIncluded(name) && !this.isExcluded(name);
  }

  private tick(): void {
    if (this.ticking || this.stopping) return;
    this.ticking = this.pass()
      .catch((err: unknown) => this.c.ports.log.warn({ err, folder: this.c.dir }, 'hot folder pass failed'))
      .finally(() => (this.ticking = undefined));
  }

  /** Looks at the files that are due: records changes, takes the stable ones. */
  private async pass(): Promise<void> {
    const now = performance.now();
    const due: [string, Pending][] = [];
    for (const entry of this.pending) {
      if (!entry[1].busy && entry[1].due <= now) due.push(entry);
      if (due.length >= PASS_LIMIT) break;
    }
    if (due.length === 0) return;
    const stable: [string, Pending][] = [];
    // the names looked at by a file thread, STAT_BATCH to a request
    for (let i = 0; i < due.length; i += STAT_BATCH) {
      const chunk = due.slice(i, i + STAT_BATCH);
      const facts = await fileThreads.stat(this.c.dir, chunk.map(([name]) => name));
      const t = performance.now();
      chunk.forEach(([name, p], k) => {
        const st = facts[k];
        if (!st) {
          this.pending.delete(name); // gone before it was taken: nothing to do
          return;
        }
        if (st.directory) {
          this.pending.delete(name);
          if (name !== DONE_DIR && name !== ERROR_DIR) this.ignoreDir(name);
          return;
        }
        const seen: Seen = { size: st.size, mtimeMs: st.mtimeMs, ino: identity(st) };
        if (!p.seen || p.seen.size !== seen.size || p.seen.mtimeMs !== seen.mtimeMs || p.seen.ino !== seen.ino) {
          p.seen = seen;
          p.since = t;
          p.due = t + this.o.stableMs;
          return;
        }
        if (t - p.since >= this.o.stableMs) stable.push([name, p]);
        else p.due = p.since + this.o.stableMs;
      });
    }
    if (stable.length === 0 || this.stopping) return;
    const writing = this.o.checkOpenWriters
      ? await openForWriting(new Set(stable.map(([name]) => path.join(this.c.dir, name))))
      : new Set<string>();
    for (const [name, p] of stable) {
      if (writing.has(path.join(this.c.dir, name))) {
        p.due = performance.now() + Math.max(this.o.stableMs, 250); // still being written: look again later
        continue;
      }
      p.busy = true;
      const seen = p.seen!;
      this.submit(name, () => takeFile(this.c, name, seen));
    }
  }

  /** Runs `take` when a slot is free; then settles the file's pending entry by the result. */
  private submit(name: string, take: () => Promise<TakeResult>): void {
    this.queue.push(async () => {
      const result = await take().catch((err: unknown): TakeResult => ({ outcome: 'retry', err }));
      this.settle(name, result);
    });
    this.drain();
  }

  private drain(): void {
    while (this.running < this.o.concurrency && this.queue.length > 0 && !this.stopping) {
      const job = this.queue.shift()!;
      this.running++;
      const done: Promise<void> = job().finally(() => {
        this.running--;
        this.inFlight.delete(done);
        this.drain();
      });
      this.inFlight.add(done);
    }
  }

  private settle(name: string, r: TakeResult): void {
    const p = this.pending.get(name);
    const now = performance.now();
    switch (r.outcome) {
      case 'taken':
      case 'failed':
      case 'vanished':
        this.pending.delete(name);
        return;
      case 'changed':
        // watched again from scratch (a new file at the name, or this one still being written)
        this.pending.set(name, { since: now, due: now, busy: false, failures: 0 });
        return;
      case 'retry': {
        if (isLeaseLost(r.err)) {
          this.pending.delete(name); // the new holder takes it; this process stops
          return;
        }
        const failures = (p?.failures ?? 0) + 1;
        const backoff = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures, 10));
        this.c.ports.log.warn({ err: r.err, file: name, folder: this.c.dir, retryInMs: backoff }, 'hot folder: file not taken yet (a passing problem); will retry');
        this.pending.set(name, { since: now, due: now + backoff, busy: false, failures });
      }
    }
  }
}
