import type { Readable } from 'node:stream';
import { Worker } from 'node:worker_threads';
import { AppError, type ErrorCode } from '../../../../errors/app-error.js';
import type { ItemBatches, ListHeader, ListLimits, ParsedList, ParsedListItem } from '../../../../formats/index.js';
import { threadEntry } from '../../../../threads/thread-entry.js';
import type { CopyChunk, CopyTarget } from './copy-encodable.js';

/**
 * The CSV import thread: ONE long-lived `worker_thread` per process, started
 * on the first import and shared by all (each import a session with its own
 * id), unref'd while no import runs so it never keeps the process alive
 * (ref'd while one does, as any pending I/O would be), started again on the
 * next import when it died (the imports in it then fail with a 500). It runs what
 * costs CPU per row (csv-parse, the row reading of csv.ts, the href check,
 * the binary COPY encoding of copy-rows.ts); the main thread only moves
 * bytes: request chunks in, finished COPY payloads out, both transferred.
 * Back-pressure both ways by credits: at most `CHUNK_CREDITS` chunks of the
 * body unacknowledged, at most `PAYLOAD_CREDITS` payloads waiting for their
 * COPY (one in flight, the next being encoded), so memory stays flat
 * whatever the body's size. Errors come back as the same `AppError`s
 * (400 naming row and column, 413) as on the main thread.
 */

/** Body chunks posted and not yet taken by the thread's parser. */
export const CHUNK_CREDITS = 4;
/** Payloads the thread may have handed over whose COPY has not finished. */
export const PAYLOAD_CREDITS = 2;

export interface OpenSession extends CopyTarget {
  t: 'open';
  id: number;
  limits: ListLimits;
  checkHrefs: boolean;
}

export type ToThread =
  | OpenSession
  | { t: 'chunk'; id: number; data: ArrayBuffer }
  | { t: 'end'; id: number }
  | { t: 'credit'; id: number }
  | { t: 'close'; id: number };

export type FromThread =
  | { t: 'taken'; id: number }
  | { t: 'copy'; id: number; data: ArrayBuffer; offset: number; length: number; rows: number }
  | { t: 'done'; id: number; header: ListHeader; count: number }
  | { t: 'fail'; id: number; error: { code?: ErrorCode; message: string; details?: Record<string, unknown> } };

type Listener = (msg: FromThread | { t: 'died'; error: Error }) => void;

class CsvThread {
  private worker: Worker | undefined;
  private readonly sessions = new Map<number, Listener>();
  private nextId = 1;

  /** Opens a session; `listener` gets its messages, or `died` when the thread stopped. */
  open(target: Omit<OpenSession, 't' | 'id'>, listener: Listener): { id: number; post: (msg: ToThread, transfer?: ArrayBuffer[]) => void; close: () => void } {
    const worker = this.start();
    const id = this.nextId++;
    this.sessions.set(id, listener);
    // held while it has imports (a pending import keeps a script alive), unref'd when idle
    if (this.sessions.size === 1) worker.ref();
    worker.postMessage({ t: 'open', id, ...target } satisfies OpenSession);
    return {
      id,
      post: (msg, transfer) => worker.postMessage(msg, transfer),
      close: () => {
        if (!this.forget(id)) return;
        if (this.worker === worker) worker.postMessage({ t: 'close', id } satisfies ToThread);
      },
    };
  }

  /** The running thread's id (none before the first import or after it died). */
  get threadId(): number | undefined {
    return this.worker?.threadId;
  }

  /** Imports running in the thread. */
  get imports(): number {
    return this.sessions.size;
  }

  /** Stops the thread (shutdown; tests); its imports fail, the next one starts it again. */
  async terminate(): Promise<void> {
    await this.worker?.terminate();
  }

  private forget(id: number): boolean {
    const had = this.sessions.delete(id);
    if (this.sessions.size === 0) this.worker?.unref();
    return had;
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const entry = threadEntry(new URL('./csv-thread-entry.js', import.meta.url));
    const worker = new Worker(entry.script, { eval: entry.eval === true });
    worker.on('message', (msg: FromThread) => {
      const listener = this.sessions.get(msg.id);
      if (msg.t === 'done' || msg.t === 'fail') this.forget(msg.id);
      listener?.(msg);
    });
    const died = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      const listeners = [...this.sessions.values()];
      this.sessions.clear();
      for (const listener of listeners) listener({ t: 'died', error });
    };
    worker.on('error', (err) => died(new Error(`the CSV import thread failed: ${err.message}`, { cause: err })));
    worker.on('exit', (code) => died(new Error(`the CSV import thread stopped (exit code ${code})`)));
    // after the listeners: adding a 'message' listener refs the thread again
    worker.unref();
    this.worker = worker;
    return worker;
  }
}

/** The process's CSV import thread. */
export const csvThread = new CsvThread();

/**
 * A CSV list parsed on the main thread (`parsed`, for stores without COPY)
 * that can also be read as COPY payloads encoded in the CSV import thread
 * from the same `source`. Whichever is read first reads the body.
 */
export function withCsvThread(parsed: ParsedList, source: Readable, limits: ListLimits): ParsedList {
  let header: ListHeader | undefined;
  const items = parsed.items as ItemBatches<ParsedListItem>;
  return {
    items: {
      batches: () => items.batches(),
      [Symbol.asyncIterator]: () => items[Symbol.asyncIterator](),
      copyChunks: (target: CopyTarget, opts: { checkHrefs?: boolean } = {}) =>
        copyChunks(source, { ...target, limits, checkHrefs: opts.checkHrefs === true }, (h) => (header = h)),
    } as ItemBatches<ParsedListItem>,
    header: () => header ?? parsed.header(),
  };
}

/** The body posted to a session of the thread; yields its payloads as they are finished, then hands the list's header to `onHeader`. */
async function* copyChunks(source: Readable, target: Omit<OpenSession, 't' | 'id'>, onHeader: (h: ListHeader) => void): AsyncGenerator<CopyChunk> {
  const ready: CopyChunk[] = [];
  let failure: Error | undefined;
  let finished = false;
  let unacked = 0;
  let ended = false;
  let wake: (() => void) | undefined;
  const session = csvThread.open(target, (msg) => {
    if (msg.t === 'taken') {
      unacked--;
      if (unacked < CHUNK_CREDITS && !ended) source.resume();
      return;
    }
    if (msg.t === 'copy') {
      let freed = false;
      const done = () => {
        if (freed) return;
        freed = true;
        if (!finished && failure === undefined) session.post({ t: 'credit', id: session.id });
      };
      ready.push({ data: Buffer.from(msg.data, msg.offset, msg.length), rows: msg.rows, done });
    } else if (msg.t === 'done') {
      onHeader(msg.header);
      finished = true;
    } else if (msg.t === 'fail') {
      failure ??= msg.error.code !== undefined ? new AppError(msg.error.code, msg.error.message, msg.error.details) : new Error(msg.error.message);
    } else {
      failure ??= msg.error;
    }
    wake?.();
  });
  const onData = (chunk: Buffer | string) => {
    // a copy the thread owns (a request chunk may share its memory with others)
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    const data = new Uint8Array(bytes.length);
    data.set(bytes);
    session.post({ t: 'chunk', id: session.id, data: data.buffer }, [data.buffer]);
    if (++unacked >= CHUNK_CREDITS) source.pause();
  };
  const onEnd = () => {
    ended = true;
    session.post({ t: 'end', id: session.id });
  };
  const onError = (err: Error) => {
    failure ??= err;
    wake?.();
  };
  source.on('data', onData);
  source.on('end', onEnd);
  source.on('error', onError);
  source.resume();
  try {
    for (;;) {
      if (failure !== undefined) throw failure;
      const chunk = ready.shift();
      if (chunk) {
        yield chunk;
        continue;
      }
      if (finished) return;
      await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
    }
  } finally {
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('error', onError);
    // a body not read to its end stays paused for its owner to discard
    if (!ended) source.pause();
    session.close();
  }
}
