import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { PDFArray, PDFDict, PDFDocument, PDFName, PDFRef } from 'pdf-lib';

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
    // pdf-lib walks the page tree recursively: a tree that loops back would overflow the stack
    const treeProblem = pageTreeProblem(doc);
    if (treeProblem) return { pages: null, sizes: [], reason: `the PDF's page tree ${treeProblem}` };
    // the page tree is read lazily: a broken one fails here, not in load
    const sizes = doc.getPages().map((p, i): PageSize => {
      const rotation = ((p.getRotation().angle % 360) + 360) % 360;
      const { width, height } = p.getSize();
      const [w, h] = rotation === 90 || rotation === 270 ? [height, width] : [width, height];
      return { page: i + 1, width: round(w), height: round(h), widthMm: mm(w), heightMm: mm(h), rotation };
    });
    return { pages: sizes.length, sizes };
  } catch (err) {
    // a stack overflow is about the file, not the server: say so in the file's terms
    if (err instanceof RangeError) return { pages: null, sizes: [], reason: 'the PDF is nested too deeply to read (its page tree or objects)' };
    return { pages: null, sizes: [], reason: `the PDF does not parse (${(err as Error).message.slice(0, 200)})` };
  }
}

/** Page tree nodes walked at most, so a hostile tree costs bounded time. */
const MAX_TREE_NODES = 1_000_000;

/**
 * Why the page tree cannot be read as a tree, or undefined: a node reached
 * twice (a loop, `/Kids [2 0 R]` inside object 2, or a node with two
 * parents). Iterative, so the check itself cannot overflow.
 */
function pageTreeProblem(doc: PDFDocument): string | undefined {
  const seen = new Set<string>();
  const stack: unknown[] = [doc.catalog.get(PDFName.of('Pages'))];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node instanceof PDFRef) {
      const key = `${node.objectNumber} ${node.generationNumber}`;
      if (seen.has(key)) return `is circular: object ${key} R is reached twice`;
      if (seen.size >= MAX_TREE_NODES) return `has more than ${MAX_TREE_NODES} nodes`;
      seen.add(key);
    }
    const dict = node instanceof PDFRef ? doc.context.lookup(node) : node;
    if (!(dict instanceof PDFDict)) continue;
    const kids = dict.lookup(PDFName.of('Kids'));
    if (kids instanceof PDFArray) for (let i = 0; i < kids.size(); i++) stack.push(kids.get(i));
  }
  return undefined;
}
