import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../../../src/errors/app-error.js';
import { copyEncodable, type CopyChunk } from '../../../../../src/areas/lists/store/bulk/copy-encodable.js';
import { CHUNK_CREDITS, csvThread } from '../../../../../src/areas/lists/store/bulk/csv-thread.js';
import { parseForImport } from '../../../../../src/areas/lists/store/bulk/parse-import.js';
import { importFormat } from '../../../../../src/formats/index.js';

/**
 * The CSV import thread (csv-thread.ts), read as COPY payloads the way
 * `insertItemsFrom` reads them on PostgreSQL: sessions sharing the one
 * thread, its death mid-import, back-pressure both ways.
 */

const csv = importFormat('text/csv');
const row = (i: number) => `/v1/services/store/repo/${randomUUID()},"Document ${i}, page 1",${i % 5}\r\n`;
const HEADER = 'list.name,item.href,item.metadata.name,item.metadata.copies\r\n';

function chunksOf(source: Readable, chunkRows = 100) {
  const parsed = parseForImport(csv, source, { maxItems: 1_000_000 });
  const encodable = copyEncodable(parsed.items)!;
  expect(encodable).toBeDefined();
  return { parsed, chunks: encodable.copyChunks({ lid: randomUUID(), base: 0, chunkRows })[Symbol.asyncIterator]() };
}

/** Reads every COPY payload (each must start with the binary COPY signature) and answers how many rows they held. */
async function countCopyRows(it: AsyncIterator<CopyChunk>): Promise<number> {
  let rows = 0;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    expect(r.value.data.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
    rows += r.value.rows;
    r.value.done();
  }
  return rows;
}

const body = (name: string, n: number) => HEADER + Array.from({ length: n }, (_, i) => (i === 0 ? name : '') + row(i).replace(/^/, ',')).join('');

describe('the CSV import thread', () => {
  it('runs two imports at once in its one thread, each with its own rows and header', async () => {
    const a = chunksOf(Readable.from([body('A', 1234)]));
    const b = chunksOf(Readable.from([body('B', 2345)]));
    const [na, nb] = await Promise.all([countCopyRows(a.chunks), countCopyRows(b.chunks)]);
    const thread = csvThread.threadId;
    expect(thread).toBeDefined();
    expect([na, nb]).toEqual([1234, 2345]);
    expect(a.parsed.header()).toEqual({ name: 'A', metadata: {} });
    expect(b.parsed.header()).toEqual({ name: 'B', metadata: {} });
    // a third import reuses the thread
    expect(await countCopyRows(chunksOf(Readable.from([body('C', 10)])).chunks)).toBe(10);
    expect(csvThread.threadId).toBe(thread);
  });

  it('gives the same 400s as the main thread (row and column), hrefs checked for tasks', async () => {
    const bad = HEADER + ',/a,x,1\r\n,/b,"un"closed,2\r\n';
    const onMain = await (async () => {
      for await (const _ of parseForImport(csv, Readable.from([bad])).items) void _;
    })().catch((err: unknown) => err);
    const inThread = await countCopyRows(chunksOf(Readable.from([bad])).chunks).catch((err: unknown) => err);
    expect(onMain).toBeInstanceOf(AppError);
    expect(inThread).toBeInstanceOf(AppError);
    expect({ ...(inThread as AppError), message: (inThread as AppError).message }).toEqual({ ...(onMain as AppError), message: (onMain as AppError).message });
    // the href check of tasks runs where the rows are encoded
    const parsed = parseForImport(csv, Readable.from([HEADER + ',/v1/services/s/repo/' + randomUUID() + ',x,1\r\n,not a url,y,2\r\n']));
    const it = copyEncodable(parsed.items)!.copyChunks({ lid: randomUUID(), base: 0, chunkRows: 10 }, { checkHrefs: true })[Symbol.asyncIterator]();
    const err = (await countCopyRows(it).catch((e: unknown) => e)) as AppError;
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe('INVALID_HREF');
    expect(err.details).toEqual({ row: 3, column: 'item.href' });
  });

  it('fails the imports in it with a plain error (a 500) when the thread dies, and the next import starts it again', async () => {
    const source = new PassThrough();
    const { chunks } = chunksOf(source, 10);
    source.write(HEADER);
    for (let i = 0; i < 50; i++) source.write(',' + row(i));
    const first = await chunks.next();
    expect(first.done).toBe(false);
    const dead = csvThread.threadId;
    await csvThread.terminate();
    const err = await (async () => {
      for (let r = await chunks.next(); !r.done; r = await chunks.next()) r.value.done();
    })().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(AppError);
    expect((err as Error).message).toMatch(/CSV import thread/);
    source.destroy();
    expect(await countCopyRows(chunksOf(Readable.from([body('D', 500)])).chunks)).toBe(500);
    expect(csvThread.threadId).toBeDefined();
    expect(csvThread.threadId).not.toBe(dead);
  });

  it('holds the body back while payloads wait for their COPY, and goes on when they are written', async () => {
    const rows = 100_000;
    let pulled = 0;
    let i = 0;
    const source = new Readable({
      read() {
        if (i >= rows) {
          this.push(null);
          return;
        }
        let text = i === 0 ? HEADER : '';
        for (const end = Math.min(rows, i + 500); i < end; i++) text += ',' + row(i);
        pulled += text.length;
        this.push(text);
      },
    });
    const { chunks } = chunksOf(source, 1000);
    const first = await chunks.next();
    expect(first.done).toBe(false);
    // the first payload is not done(): the thread fills its other credit, then stops taking chunks
    await new Promise((resolve) => setTimeout(resolve, 500));
    const held = pulled;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(pulled).toBe(held);
    // a few payloads' worth of rows (about 90 bytes each) and the chunks in flight, not the 9 MB body
    expect(held).toBeLessThan(3 * 1000 * 100 + CHUNK_CREDITS * 64 * 1024 + 1024 * 1024);
    first.value!.done();
    expect((first.value as CopyChunk).rows + (await countCopyRows(chunks))).toBe(rows);
    expect(pulled).toBeGreaterThan(8_000_000);
  });

  it('keeps a script alive while an import runs in it, and never after', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'csv-thread-'));
    const script = path.join(dir, 'import.mts');
    const src = (file: string) => JSON.stringify(new URL(`../../../../../src/${file}`, import.meta.url).href);
    writeFileSync(script, `import { Readable } from 'node:stream';
import { importFormat } from ${src('formats/index.ts')};
import { copyEncodable } from ${src('areas/lists/store/bulk/copy-encodable.ts')};
import { parseForImport } from ${src('areas/lists/store/bulk/parse-import.ts')};
const parsed = parseForImport(importFormat('text/csv'), Readable.from(['list.name,item.href\\nL,/a\\n,/b\\n']));
let rows = 0;
for await (const c of copyEncodable(parsed.items).copyChunks({ lid: '${randomUUID()}', base: 0, chunkRows: 10 })) { rows += c.rows; c.done(); }
console.log(JSON.stringify({ rows, header: parsed.header() }));
`);
    try {
      const started = Date.now();
      const out = await new Promise<string>((resolve, reject) =>
        execFile(process.execPath, ['--import', 'tsx', script], { timeout: 60_000 }, (err, stdout) => (err ? reject(err) : resolve(stdout))));
      expect(JSON.parse(out)).toEqual({ rows: 2, header: { name: 'L', metadata: {} } });
      // it exits by itself once the import is done (the thread started for it is unref'd)
      expect(Date.now() - started).toBeLessThan(30_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
