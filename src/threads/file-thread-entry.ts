import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, fsyncSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, readlinkSync, readSync, renameSync, rmSync, unlinkSync, writeSync, type Stats } from 'node:fs';
import path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { REFUSED } from '../blobs/dir-sync.js';
import type { FileFacts, FromFileThread, NameFacts, ToFileThread } from './file-thread.js';

/**
 * A file thread (file-thread.ts starts them): the per-file work of an intake
 * done with plain blocking system calls, off the main thread; each request
 * is answered once. `hash` and `put` read a file descriptor the main thread
 * opened (descriptors are the process's, so the thread reads the very file
 * the caller holds, even if its name was replaced meanwhile). A descriptor
 * the thread opens never leaves it: Node closes a worker's descriptors when
 * the worker exits, so one handed to the main thread and closed there would
 * be closed again at the exit, by then maybe another file's or socket's
 * number. Every read is
 * positional from offset 0 into one reused buffer, so memory stays flat
 * whatever the file's size. `stat`, `writers`, `move` and `remove` are a
 * folder's name work: looking at many names, the open-for-writing scan of
 * /proc, moving a taken file to done/ or error/.
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

/** `fstat` of `fd`, and for a non-empty regular file its sha256 and size read from its start and its `fstat` after the read. */
function hashFd(fd: number): { before: FileFacts; sha256?: string; size?: number; after?: FileFacts } {
  const before = factsOf(fstatSync(fd));
  // a FIFO or device is never read (it could block the thread for good); an empty file has nothing to hash
  if (!before.file || before.size === 0) return { before };
  return { before, ...readAll(fd, 0), after: factsOf(fstatSync(fd)) };
}

/** `fsync` of a directory; the refusals dir-sync.ts counts as synced (file systems without directory `fsync`, a drop box) count here too. */
function syncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch (err) {
    if (!REFUSED.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
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

/** `lstat` of each name in `dir` (null: gone), as `FolderWatch` looks at them. */
function statNames(dir: string, names: readonly string[]): (NameFacts | null)[] {
  return names.map((name) => {
    try {
      const st = lstatSync(path.join(dir, name));
      return { ...factsOf(st), directory: st.isDirectory() };
    } catch {
      return null;
    }
  });
}

/** O_ACCMODE bits of /proc/<pid>/fdinfo's `flags` (octal): write-only or read-write. */
const O_ACCMODE = 0o3;

/**
 * Which of `paths` some process has open for writing, where Linux can tell:
 * every process's descriptors in `/proc/<pid>/fd` whose target is one of the
 * paths, and their access mode in `/proc/<pid>/fdinfo/<fd>`. Processes this
 * one may not inspect are not seen; without `/proc`, nothing is. One pass
 * serves any number of paths.
 */
function openForWriting(paths: readonly string[]): string[] {
  const wanted = new Set(paths);
  const found = new Set<string>();
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return [];
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or not ours to look at
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!wanted.has(target) || found.has(target)) continue;
      try {
        const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'utf8'))?.[1];
        if (flags !== undefined && (parseInt(flags, 8) & O_ACCMODE) !== 0) found.add(target);
      } catch {
        // closed meanwhile
      }
    }
  }
  return [...found];
}

const exists = (p: string): boolean => {
  try {
    lstatSync(p);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
};

/** `name` with ` (<tag>)` before its extension. */
function taggedName(name: string, tag: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${name.slice(0, dot)} (${tag})${name.slice(dot)}` : `${name} (${tag})`;
}

/** Whether `dir/name` is the file of identity `ino` (`dev:ino`), when one is given. */
function isStill(dir: string, name: string, ino: string | undefined): boolean {
  if (ino === undefined) return true;
  try {
    const st = lstatSync(path.join(dir, name));
    return `${st.dev}:${st.ino}` === ino;
  } catch {
    return false;
  }
}

/** folder-moves.ts `moveInto`, blocking: the name it got in `sub/`, or null when the source was gone (or another file). */
function moveInto(dir: string, name: string, sub: string, tag: string, ino: string | undefined): string | null {
  if (!isStill(dir, name, ino)) return null;
  let target = name;
  if (exists(path.join(dir, sub, target))) target = taggedName(name, tag);
  for (let n = 2; exists(path.join(dir, sub, target)); n++) target = taggedName(name, `${tag}-${n}`);
  try {
    renameSync(path.join(dir, name), path.join(dir, sub, target));
    return target;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** folder-moves.ts `removeSource`, blocking: false when it was gone already (or another file). */
function remove(dir: string, name: string, ino: string | undefined): boolean {
  if (!isStill(dir, name, ino)) return false;
  try {
    unlinkSync(path.join(dir, name));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

port.on('message', (msg: ToFileThread) => {
  let answer: FromFileThread;
  try {
    if (msg.op === 'hash') {
      answer = { id: msg.id, ok: true, ...hashFd(msg.fd) };
    } else if (msg.op === 'put') {
      answer = { id: msg.id, ok: true, ...put(msg.fd, msg.root, msg.tmp, msg.maxBytes) };
    } else if (msg.op === 'stat') {
      answer = { id: msg.id, ok: true, facts: statNames(msg.dir, msg.names) };
    } else if (msg.op === 'writers') {
      answer = { id: msg.id, ok: true, paths: openForWriting(msg.paths) };
    } else if (msg.op === 'move') {
      answer = { id: msg.id, ok: true, moved: moveInto(msg.dir, msg.name, msg.sub, msg.tag, msg.ino) };
    } else {
      answer = { id: msg.id, ok: true, removed: remove(msg.dir, msg.name, msg.ino) };
    }
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    answer = { id: msg.id, ok: false, error: { message: e.message, ...(e.code ? { code: e.code } : {}) } };
  }
  port.postMessage(answer);
});
