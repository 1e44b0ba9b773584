import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, mkdirSync, openSync, readSync, renameSync, rmSync, writeSync, type Stats } from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import type { FileFacts, FromFileThread, ToFileThread } from './file-thread.js';

/**
 * A file thread (file-thread.ts starts them): the per-file work of an intake
 * done with plain blocking system calls, off the main thread. A request
 * names a file descriptor the main thread opened (descriptors are the
 * process's, so the thread reads the very file the caller holds, even if
 * its name was replaced meanwhile) and is answered once. Every read is
 * positional from offset 0 into one reused buffer: memory stays flat
 * whatever the file's size.
 */

const port = parentPort!;
const CHUNK = 1024 * 1024;
const buffer = Buffer.allocUnsafe(CHUNK);

const factsOf = (st: Stats): FileFacts => ({ file: st.isFile(), size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino });

/** Reads `fd` from its start to its end, hashing; `sink` gets each chunk (a view of the shared buffer). */
function readAll(fd: number, maxBytes: number, sink?: (chunk: Buffer) => void): { sha256: string; size: number } {
  const hash = createHash('sha256');
  let size = 0;
  for (;;) {
    const n = readSync(fd, buffer, 0, CHUNK, size);
    if (n === 0) break;
    size += n;
    if (maxBytes > 0 && size > maxBytes) throw Object.assign(new Error(`content is larger than the limit of ${maxBytes} bytes`), { code: 'PAYLOAD_TOO_LARGE' });
    const chunk = buffer.subarray(0, n);
    hash.update(chunk);
    sink?.(chunk);
  }
  return { sha256: hash.digest('hex'), size };
}

/** `fsync` of a directory; file systems that refuse it (or a directory this process may not open) count as synced, as dir-sync.ts. */
function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch (err) {
    if (!['EINVAL', 'EISDIR', 'EBADF', 'ENOTSUP', 'EPERM', 'EACCES'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Copies `fd` into the blob store under `root` as blob-store.ts `put` does:
 * hashed while written to the part file `tmp` (created exclusively), the
 * part synced and renamed to its hash's place, the directory synced (and
 * the fan-out levels above when they were made now).
 */
function put(fd: number, root: string, tmp: string, maxBytes: number): { sha256: string; size: number } {
  const out = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
  let done: { sha256: string; size: number };
  try {
    done = readAll(fd, maxBytes, (chunk) => {
      for (let at = 0; at < chunk.length;) at += writeSync(out, chunk, at, chunk.length - at);
    });
    fsyncSync(out);
  } catch (err) {
    closeSync(out);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(out);
  try {
    const dir = path.join(root, done.sha256.slice(0, 2), done.sha256.slice(2, 4));
    const final = path.join(dir, done.sha256);
    try {
      renameSync(tmp, final);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      mkdirSync(dir, { recursive: true });
      renameSync(tmp, final);
      syncDir(path.dirname(dir));
      syncDir(root);
    }
    syncDir(dir);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  return done;
}

port.on('message', (msg: ToFileThread) => {
  let answer: FromFileThread;
  try {
    if (msg.op === 'hash') {
      const before = factsOf(fstatSync(msg.fd));
      // a FIFO or device is never read (it could block the thread for good); an empty file has nothing to hash
      if (!before.file || before.size === 0) answer = { id: msg.id, ok: true, before };
      else answer = { id: msg.id, ok: true, before, ...readAll(msg.fd, 0), after: factsOf(fstatSync(msg.fd)) };
    } else {
      answer = { id: msg.id, ok: true, ...put(msg.fd, msg.root, msg.tmp, msg.maxBytes) };
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    answer = { id: msg.id, ok: false, error: { message: e.message, ...(e.code ? { code: e.code } : {}) } };
  }
  port.postMessage(answer);
});
