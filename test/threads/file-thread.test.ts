import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/blobs/blob-store.js';
import { AppError } from '../../src/errors/app-error.js';
import { fileThreads } from '../../src/threads/file-thread.js';

/**
 * The file threads against real files: what each operation answers, that a
 * large file is read in bounded pieces, that a named pipe is never read, and
 * that a thread that stops fails its requests without stopping the next.
 */
let dir: string;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-file-thread-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file threads', () => {
  it('hash: the sha256 and size of an open file, read in bounded pieces, with its fstat before and after', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17); // more than one 1 MiB read
    await writeFile(path.join(dir, 'a.bin'), bytes);
    const fh = await open(path.join(dir, 'a.bin'));
    try {
      const read = await fileThreads.hash(fh.fd);
      expect(read).toMatchObject({ sha256: sha(bytes), size: bytes.length, before: { file: true, size: bytes.length }, after: { size: bytes.length } });
      const st = await stat(path.join(dir, 'a.bin'));
      expect(read.before).toMatchObject({ ino: st.ino, dev: st.dev, mtimeMs: st.mtimeMs });
    } finally {
      await fh.close();
    }
  });

  it('hash never reads a FIFO (it could block the thread for good): its fstat says it is not a file', async () => {
    execFileSync('mkfifo', [path.join(dir, 'pipe')]);
    const { constants } = await import('node:fs');
    const fh = await open(path.join(dir, 'pipe'), constants.O_RDONLY | constants.O_NONBLOCK);
    try {
      const read = await fileThreads.hash(fh.fd);
      expect(read.before.file).toBe(false);
      expect(read.sha256).toBeUndefined();
    } finally {
      await fh.close();
    }
  });

  it('put (BlobStore.putFile): the bytes stored under their hash, synced, nothing left in tmp/; over the limit: 413 and no part file', async () => {
    const blobs = new BlobStore(path.join(dir, 'blobs'));
    await blobs.init();
    const bytes = randomBytes(200_000);
    await writeFile(path.join(dir, 'b.bin'), bytes);
    const fh = await open(path.join(dir, 'b.bin'));
    try {
      expect(await blobs.putFile(fh.fd)).toEqual({ sha256: sha(bytes), size: bytes.length });
      expect(await readFile(blobs.pathOf(sha(bytes)))).toEqual(bytes);
      await expect(blobs.putFile(fh.fd, 1000)).rejects.toSatisfy((e: unknown) => e instanceof AppError && e.code === 'PAYLOAD_TOO_LARGE');
    } finally {
      await fh.close();
    }
    expect(await readdir(path.join(dir, 'blobs', 'tmp'))).toEqual([]);
  });

  it('stat, move and remove: names looked at together; a move or delete touches only the file of the identity given', async () => {
    const folder = path.join(dir, 'folder');
    await mkdir(path.join(folder, 'done'), { recursive: true });
    await writeFile(path.join(folder, 'one.txt'), 'one');
    await mkdir(path.join(folder, 'sub'));
    const [one, sub, gone] = await fileThreads.stat(folder, ['one.txt', 'sub', 'gone.txt']);
    expect(one).toMatchObject({ file: true, directory: false, size: 3 });
    expect(sub).toMatchObject({ file: false, directory: true });
    expect(gone).toBeNull();
    const ino = `${one!.dev}:${one!.ino}`;
    expect(await fileThreads.move(folder, 'one.txt', 'done', 't1', '1:1')).toBeUndefined(); // another identity: stays
    expect(await fileThreads.move(folder, 'one.txt', 'done', 't1', ino)).toBe('one.txt');
    await writeFile(path.join(folder, 'one.txt'), 'two');
    expect(await fileThreads.move(folder, 'one.txt', 'done', 't2')).toBe('one (t2).txt'); // done/ keeps both
    await writeFile(path.join(folder, 'three.txt'), '3');
    expect(await fileThreads.remove(folder, 'three.txt', '1:1')).toBe(false);
    expect(await fileThreads.remove(folder, 'three.txt')).toBe(true);
    expect((await readdir(path.join(folder, 'done'))).sort()).toEqual(['one (t2).txt', 'one.txt']);
  });

  it('the open-for-writing scan sees a file this process holds open for writing, not one open for reading', async () => {
    const w = path.join(dir, 'writing.txt');
    const r = path.join(dir, 'reading.txt');
    await writeFile(r, 'r');
    const wh = await open(w, 'w');
    const rh = await open(r, 'r');
    try {
      expect(await fileThreads.writers([w, r])).toEqual([w]);
    } finally {
      await wh.close();
      await rh.close();
    }
    expect(await fileThreads.writers([w, r])).toEqual([]);
  });

  it('a thread that stops fails its requests and closes none of the caller\'s descriptors; the next request starts a thread again', async () => {
    // after the threads opened and closed descriptors of their own (the puts above), a descriptor of the caller
    // that a stopping thread was reading stays the caller's (Node closes a worker's own descriptors at its exit).
    // A hash of 1 GiB (sparse: zeros) keeps its thread busy far longer than the terminate below takes
    const big = path.join(dir, 'big.bin');
    const { truncate } = await import('node:fs/promises');
    await writeFile(big, '');
    await truncate(big, 1024 ** 3);
    const fh = await open(big);
    try {
      const busy = fileThreads.hash(fh.fd);
      await fileThreads.terminate();
      await expect(busy).rejects.toThrow(/file thread/);
    } finally {
      await fh.close(); // EBADF if the thread's exit had closed it
    }
    await writeFile(path.join(dir, 'c.bin'), 'c');
    const [c] = await fileThreads.stat(dir, ['c.bin']);
    expect(c).toMatchObject({ file: true, size: 1 });
  });
});
