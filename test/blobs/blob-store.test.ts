import { createHash } from 'node:crypto';
import { readFile, readdir, utimes } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/blobs/blob-store.js';
import { AppError } from '../../src/errors/app-error.js';
import { tempDir } from '../helpers/fs.js';
import { readBytes } from '../helpers/streams.js';

let dir: string;
let blobs: BlobStore;
beforeAll(async () => {
  dir = await tempDir('wcr-blobs-');
  blobs = new BlobStore(dir);
  await blobs.init();
});

function* chunks(n: number, size: number) {
  for (let i = 0; i < n; i++) yield Buffer.alloc(size, i % 251);
}

describe('content-addressed blob store', () => {
  it('streams in, names the blob by sha256, streams out; identical content is stored once', async () => {
    const hash = createHash('sha256');
    for (const c of chunks(64, 64 * 1024)) hash.update(c);
    const info = await blobs.put(Readable.from(chunks(64, 64 * 1024)));
    expect(info).toEqual({ sha256: hash.digest('hex'), size: 64 * 64 * 1024 });
    const again = await blobs.put(Readable.from(chunks(64, 64 * 1024)));
    expect(again.sha256).toBe(info.sha256);
    const out = createHash('sha256');
    for await (const c of (await blobs.open(info.sha256))!) out.update(c as Buffer);
    expect(out.digest('hex')).toBe(info.sha256);
    const range = await blobs.open(info.sha256, { start: 65536, end: 65539 });
    expect(await readBytes(range!)).toEqual(Buffer.alloc(4, 1));
    expect(await readdir(path.join(dir, 'tmp'))).toEqual([]);
  });

  it('refuses content past the limit with 413 and leaves no temp file', async () => {
    await expect(blobs.put(Readable.from(chunks(10, 1024)), 5000)).rejects.toSatisfy((e) => e instanceof AppError && e.status === 413);
    expect(await readdir(path.join(dir, 'tmp'))).toEqual([]);
  });

  it('a failing source leaves nothing behind', async () => {
    const failing = new Readable({ read() { this.destroy(new Error('client went away')); } });
    await expect(blobs.put(failing)).rejects.toThrow('client went away');
    expect(await readdir(path.join(dir, 'tmp'))).toEqual([]);
  });

  it('rejects names that are not hashes (no path tricks)', () => {
    expect(() => blobs.pathOf('../../etc/passwd')).toThrow();
  });

  it('garbage collection removes only old unreferenced blobs', async () => {
    const keep = await blobs.put(Readable.from([Buffer.from('keep')]));
    const drop = await blobs.put(Readable.from([Buffer.from('drop')]));
    const fresh = await blobs.put(Readable.from([Buffer.from('fresh')]));
    const old = new Date(Date.now() - 2 * 3600_000);
    await utimes(blobs.pathOf(keep.sha256), old, old);
    await utimes(blobs.pathOf(drop.sha256), old, old);
    const removed = await blobs.collectGarbage(async (hashes) => new Set(hashes.filter((h) => h === keep.sha256)), 3600_000);
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await blobs.has(drop.sha256)).toBe(false);
    expect(await readFile(blobs.pathOf(keep.sha256), 'utf8')).toBe('keep');
    expect(await blobs.has(fresh.sha256)).toBe(true);
  });
});
