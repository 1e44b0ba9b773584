import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { AppError } from '../errors/app-error.js';
import { threadEntry } from './thread-entry.js';

/** What `fstat` said of a file, as the thread sends it. */
export interface FileFacts {
  file: boolean;
  size: number;
  mtimeMs: number;
  dev: number;
  ino: number;
}

/** A file's hash read by a thread: `before` always; the rest only for a non-empty regular file. */
export interface FileHash {
  before: FileFacts;
  sha256?: string;
  size?: number;
  /** `fstat` once the read ended: a file that changed while read differs from `before`. */
  after?: FileFacts;
}

/** What `lstat` said of a name in a folder. */
export interface NameFacts extends FileFacts {
  directory: boolean;
}

type FileRequest =
  | { op: 'hash'; fd: number }
  | { op: 'put'; fd: number; root: string; tmp: string; maxBytes: number }
  | { op: 'stat'; dir: string; names: readonly string[] }
  | { op: 'writers'; paths: readonly string[] }
  | { op: 'move'; dir: string; name: string; sub: string; tag: string; ino?: string }
  | { op: 'remove'; dir: string; name: string; ino?: string };

export type ToFileThread = FileRequest & { id: number };

export type FromFileThread =
  | ({ id: number; ok: true } & (
    | { before: FileFacts; sha256?: string; size?: number; after?: FileFacts }
    | { sha256: string; size: number }
    | { facts: (NameFacts | null)[] }
    | { paths: string[] }
    | { moved: string | null }
    | { removed: boolean }))
  | { id: number; ok: false; error: { message: string; code?: string } };

/** A thread's answer without its envelope. */
type Answer = Omit<FromFileThread & { ok: true }, 'id' | 'ok'>;

interface Thread {
  worker: Worker;
  waiting: Map<number, { resolve: (answer: Answer) => void; reject: (e: Error) => void }>;
}

/**
 * The file threads: the per-file work of an intake (hashing a file, copying
 * it into the blob store with its `fsync`s, looking at a folder's names,
 * moving a taken file) done with blocking system calls
 * in up to `size` long-lived worker threads, so the main thread only posts
 * a descriptor and gets a hash back. Each asynchronous file system call on
 * the main thread costs tens of microseconds of its time here (the libuv
 * hand-off both ways), and a file stream makes a dozen of them per file;
 * in a thread the same calls are plain system calls. A request goes to the
 * thread with the fewest open requests. Threads are started on first use,
 * unref'd while idle (they never keep a process alive), and started again
 * when one died (its requests fail). Descriptors are the caller's: it opens
 * them, keeps them open until the answer came, and closes them.
 */
class FileThreads {
  private readonly threads: (Thread | undefined)[];
  private nextId = 1;

  constructor(size: number) {
    this.threads = new Array<Thread | undefined>(Math.max(1, size)).fill(undefined);
  }

  /**
   * sha256 and size of the open file `fd`, read from its start, with its
   * `fstat` before and after the read. The caller opens and closes `fd`
   * (never a thread: see file-thread-entry.ts).
   */
  async hash(fd: number): Promise<FileHash> {
    const m = await this.request({ op: 'hash', fd });
    return m as FileHash;
  }

  /** Copies the open file `fd` into the blob store at `root` through the part file `tmp` (see blob-store.ts `putFile`). */
  async put(fd: number, root: string, tmp: string, maxBytes: number): Promise<{ sha256: string; size: number }> {
    const m = await this.request({ op: 'put', fd, root, tmp, maxBytes });
    return m as { sha256: string; size: number };
  }

  /** `lstat` of each of `names` in `dir`: its facts, or null when it is gone. */
  async stat(dir: string, names: readonly string[]): Promise<(NameFacts | null)[]> {
    return ((await this.request({ op: 'stat', dir, names })) as { facts: (NameFacts | null)[] }).facts;
  }

  /** Which of `paths` a process holds open for writing (Linux `/proc`; see the thread's `openForWriting`). */
  async writers(paths: readonly string[]): Promise<string[]> {
    return ((await this.request({ op: 'writers', paths })) as { paths: string[] }).paths;
  }

  /** Moves `dir/name` into `dir/sub/` (folder-moves.ts `moveInto`): the name it got, or undefined. */
  async move(dir: string, name: string, sub: string, tag: string, ino?: string): Promise<string | undefined> {
    return ((await this.request({ op: 'move', dir, name, sub, tag, ...(ino !== undefined ? { ino } : {}) })) as { moved: string | null }).moved ?? undefined;
  }

  /** Deletes `dir/name` (folder-moves.ts `removeSource`): false when it was gone (or another file). */
  async remove(dir: string, name: string, ino?: string): Promise<boolean> {
    return ((await this.request({ op: 'remove', dir, name, ...(ino !== undefined ? { ino } : {}) })) as { removed: boolean }).removed;
  }

  /** Stops every thread (shutdown; tests): their requests fail, the next request starts one again. */
  async terminate(): Promise<void> {
    await Promise.all(this.threads.map((t) => t?.worker.terminate()));
  }

  private request(msg: FileRequest): Promise<Answer> {
    const thread = this.pick();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (thread.waiting.size === 0) thread.worker.ref();
      thread.waiting.set(id, { resolve, reject });
      thread.worker.postMessage({ ...msg, id } satisfies ToFileThread);
    });
  }

  private pick(): Thread {
    let best: Thread | undefined;
    for (let i = 0; i < this.threads.length; i++) {
      const t = this.threads[i] ?? (this.threads[i] = this.start(i));
      if (!best || t.waiting.size < best.waiting.size) best = t;
      if (t.waiting.size === 0) break;
    }
    return best!;
  }

  private start(slot: number): Thread {
    const entry = threadEntry(new URL('./file-thread-entry.js', import.meta.url));
    const worker = new Worker(entry.script, { eval: entry.eval === true });
    const thread: Thread = { worker, waiting: new Map() };
    worker.on('message', (m: FromFileThread) => {
      const w = thread.waiting.get(m.id);
      if (!w) return;
      thread.waiting.delete(m.id);
      if (thread.waiting.size === 0) worker.unref();
      if (!m.ok) {
        w.reject(threadError(m.error));
        return;
      }
      const { id: _id, ok: _ok, ...answer } = m;
      w.resolve(answer);
    });
    const died = (error: Error) => {
      if (this.threads[slot] !== thread) return;
      this.threads[slot] = undefined;
      const waiting = [...thread.waiting.values()];
      thread.waiting.clear();
      for (const w of waiting) w.reject(error);
    };
    worker.on('error', (err) => died(new Error(`a file thread failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => died(new Error(`a file thread stopped (exit code ${code})`)));
    // after the listeners: adding a 'message' listener refs the thread again
    worker.unref();
    return thread;
  }
}

/** The thread's error as the caller's: 413 past the size limit, else an `Error` with the system call's `code`. */
function threadError(e: { message: string; code?: string }): Error {
  if (e.code === 'PAYLOAD_TOO_LARGE') return new AppError('PAYLOAD_TOO_LARGE', e.message);
  return Object.assign(new Error(e.message), e.code ? { code: e.code } : {});
}

/** The process's file threads: two, or one on a one-core machine. */
export const fileThreads = new FileThreads(Math.min(2, os.availableParallelism()));
