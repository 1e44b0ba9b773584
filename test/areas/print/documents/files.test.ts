import { createWriteStream } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { inflateRawSync } from 'node:zlib';
import { degrees, PDFDocument } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../../../src/blobs/blob-store.js';
import { collectJobZip } from '../../../../src/areas/print/documents/collect.js';
import { pageInfo } from '../../../../src/areas/print/documents/page-info.js';
import { testPagePdf } from '../../../../src/areas/print/documents/test-page.js';
import { tempDir } from '../../../helpers/fs.js';
import { readBytes } from '../../../helpers/streams.js';

let dir: string;
let blobs: BlobStore;
beforeAll(async () => {
  dir = await tempDir('wcr-printfiles-');
  blobs = new BlobStore(path.join(dir, 'blobs'));
  await blobs.init();
});

async function pdfText(bytes: Uint8Array): Promise<string> {
  const pdf = await getDocument({ data: new Uint8Array(bytes), verbosity: 0 }).promise;
  const content = await (await pdf.getPage(1)).getTextContent();
  await pdf.destroy();
  return content.items.map((it) => ('str' in it ? it.str : '')).join('\n');
}

/** The entries of a ZIP, read from its central directory (stored and deflated entries). */
function unzip(zip: Buffer): Map<string, Buffer> {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  expect(eocd).toBeGreaterThan(-1);
  const count = zip.readUInt16LE(eocd + 10);
  let at = zip.readUInt32LE(eocd + 16);
  const out = new Map<string, Buffer>();
  for (let i = 0; i < count; i++) {
    expect(zip.readUInt32LE(at)).toBe(0x02014b50);
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const nameLen = zip.readUInt16LE(at + 28);
    const extraLen = zip.readUInt16LE(at + 30);
    const commentLen = zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLen).toString('utf8');
    const dataAt = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const data = zip.subarray(dataAt, dataAt + compressed);
    out.set(name, method === 8 ? inflateRawSync(data) : Buffer.from(data));
    at += 46 + nameLen + extraLen + commentLen;
  }
  return out;
}

describe('test page', () => {
  it('one A4 page naming the printer, its connection and the time', async () => {
    const at = new Date('2026-11-22T10:00:00Z');
    const bytes = await testPagePdf({ printer: 'Floor 2 / Room 4', connection: 'socket://10.0.0.9:9100', at, user: 'alice' });
    const doc = await PDFDocument.load(bytes);
    expect(doc.getPageCount()).toBe(1);
    expect(doc.getPage(0).getWidth()).toBeCloseTo(595.28, 1);
    const text = await pdfText(bytes);
    expect(text).toContain('Printer: Floor 2 / Room 4');
    expect(text).toContain('socket://10.0.0.9:9100');
    expect(text).toContain('2026-11-22T10:00:00.000Z');
  });

  it('a Unicode name the built-in font cannot draw: the exact name in the title, placeholders on the page', async () => {
    const bytes = await testPagePdf({ printer: 'Drucker 東京 ü' });
    expect((await PDFDocument.load(bytes)).getTitle()).toBe('Test page: Drucker 東京 ü');
    expect(await pdfText(bytes)).toContain('Printer: Drucker ?? ü');
  });
});

describe('page info', () => {
  it('page count and sizes (rotation applied), from a real PDF', async () => {
    const doc = await PDFDocument.create();
    doc.addPage([595.28, 841.89]);
    doc.addPage([612, 792]).setRotation(degrees(90));
    const file = path.join(dir, 'mixed.pdf');
    await writeFile(file, await doc.save());
    const info = await pageInfo(file);
    expect(info.pages).toBe(2);
    expect(info.sizes[0]).toMatchObject({ page: 1, width: 595.28, height: 841.89, widthMm: 210, heightMm: 297, rotation: 0 });
    expect(info.sizes[1]).toMatchObject({ page: 2, width: 792, height: 612, rotation: 90 });
  });

  it('not a PDF, a broken PDF, an empty file: pages null with a reason; an encrypted PDF still counts', async () => {
    const cases: [string, string | Buffer, RegExp][] = [['t.txt', 'hello', /not a PDF/], ['b.pdf', '%PDF-1.4 nothing', /does not parse/], ['e.pdf', '', /empty/]];
    for (const [name, body, reason] of cases) {
      const f = path.join(dir, name);
      await writeFile(f, body);
      const info = await pageInfo(f);
      expect(info.pages, name).toBeNull();
      expect(info.reason, name).toMatch(reason);
    }
    expect((await pageInfo(path.resolve('test/fixtures/encrypted.pdf'))).pages).toBeGreaterThan(0);
  });
});

describe('collect', () => {
  it('a ZIP of the document, the kept stages, the record and the log', async () => {
    const docBlob = await blobs.put(Readable.from([Buffer.from('%PDF-1.7 the document')]));
    const stage = await blobs.put(Readable.from([Buffer.from('%PDF-1.7 stage output')]));
    const zipStream = await collectJobZip(blobs, {
      record: { id: 7, status: 'processed', name: 'Report' },
      log: '10:00 submitted\n10:01 delivered\n',
      document: { sha256: docBlob.sha256, name: '../../etc/passwd' },
      stages: [{ stage: 'preprocessed', sha256: stage.sha256, mimeType: 'application/pdf' }, { stage: 'gone', sha256: 'f'.repeat(64), mimeType: 'application/pdf' }],
    });
    const entries = unzip(await readBytes(zipStream));
    expect([...entries.keys()]).toEqual(['job.json', 'log.txt', 'document/__.._etc_passwd', 'stages/preprocessed.pdf', 'MISSING.txt']);
    expect(JSON.parse(entries.get('job.json')!.toString())).toEqual({ id: 7, status: 'processed', name: 'Report' });
    expect(entries.get('log.txt')!.toString()).toContain('delivered');
    expect(entries.get('document/__.._etc_passwd')!.toString()).toBe('%PDF-1.7 the document');
    expect(entries.get('stages/preprocessed.pdf')!.toString()).toBe('%PDF-1.7 stage output');
    expect(entries.get('MISSING.txt')!.toString()).toContain('stages/gone.pdf');
  });

  it('streams: a 96 MiB document goes through with memory flat (resident growth under 48 MiB)', async () => {
    const big = path.join(dir, 'big.pdf');
    const chunk = Buffer.alloc(1024 * 1024, 0x42);
    await pipeline(Readable.from((function* () { for (let i = 0; i < 96; i++) yield chunk; })()), createWriteStream(big));
    const { createReadStream } = await import('node:fs');
    const blob = await blobs.put(createReadStream(big));
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    let total = 0;
    const stream = await collectJobZip(blobs, { record: {}, log: '', document: { sha256: blob.sha256, name: 'big.pdf' }, stages: [] });
    await pipeline(stream, new Writable({
      write(c: Buffer, _e, cb) {
        total += c.length;
        peak = Math.max(peak, process.memoryUsage().rss);
        setImmediate(cb);
      },
    }));
    // stored, not deflated: every byte went through
    expect(total).toBeGreaterThan(96 * 1024 * 1024);
    expect(peak - before).toBeLessThan(48 * 1024 * 1024);
  });
});
