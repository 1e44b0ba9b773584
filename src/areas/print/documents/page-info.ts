import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { PDFDocument } from 'pdf-lib';

/** One page's size in points (1/72 inch) and millimetres, as the page shows it (rotation applied). */
export interface PageSize {
  page: number;
  width: number;
  height: number;
  widthMm: number;
  heightMm: number;
  rotation: number;
}

/** `GET /v3/jobs/{id}/pageinfo`: page count and sizes; `pages: null` when the document is not a PDF (or cannot be read as one). */
export interface PageInfo {
  pages: number | null;
  sizes: PageSize[];
  /** Why `pages` is null. */
  reason?: string;
}

/** Largest document analysed; pdf-lib parses a whole file in memory. */
export const MAX_PAGEINFO_BYTES = 256 * 1024 * 1024;

const isPdfStart = (chunk: Buffer) => chunk.subarray(0, 1024).includes('%PDF-');
const mm = (pt: number) => Math.round((pt * 25.4 * 10) / 72) / 10;
const round = (n: number) => Math.round(n * 100) / 100;

/**
 * Reads page count and page sizes of a PDF with pdf-lib, from a file or a
 * small document's bytes. A file is read from disk in chunks (never a whole
 * request body); whether it is a PDF is decided from its first KiB before the
 * rest is read.
 */
export async function pageInfo(file: string | Buffer): Promise<PageInfo> {
  let bytes: Buffer;
  if (typeof file === 'string') {
    const { size } = await stat(file);
    const chunks: Buffer[] = [];
    let read = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 }) as AsyncIterable<Buffer>) {
      if (read === 0 && !isPdfStart(chunk)) return { pages: null, sizes: [], reason: 'not a PDF' };
      if (size > MAX_PAGEINFO_BYTES) return { pages: null, sizes: [], reason: `larger than ${MAX_PAGEINFO_BYTES} bytes` };
      chunks.push(chunk);
      read += chunk.length;
    }
    bytes = Buffer.concat(chunks, read);
  } else {
    // a small document held in memory (stored with its job)
    if (file.length > 0 && !isPdfStart(file)) return { pages: null, sizes: [], reason: 'not a PDF' };
    bytes = file;
  }
  if (bytes.length === 0) return { pages: null, sizes: [], reason: 'empty' };
  try {
    // encrypted PDFs still tell their page tree
    const doc = await PDFDocument.load(bytes, { ignoreEncryption: true, updateMetadata: false });
    // the page tree is read lazily: a broken one fails here, not in load
    const sizes = doc.getPages().map((p, i): PageSize => {
      const rotation = ((p.getRotation().angle % 360) + 360) % 360;
      const { width, height } = p.getSize();
      const [w, h] = rotation === 90 || rotation === 270 ? [height, width] : [width, height];
      return { page: i + 1, width: round(w), height: round(h), widthMm: mm(w), heightMm: mm(h), rotation };
    });
    return { pages: sizes.length, sizes };
  } catch (err) {
    return { pages: null, sizes: [], reason: `the PDF does not parse (${(err as Error).message.slice(0, 200)})` };
  }
}
