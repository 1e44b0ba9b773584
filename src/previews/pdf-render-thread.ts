/**
 * Worker-thread entry point that rasterises the first page of a PDF with PDF.js (`pdfjs-dist`,
 * legacy build for Node) onto an `@napi-rs/canvas` canvas.
 *
 * Parsing and painting a complex page can take seconds of synchronous JavaScript, which would
 * stall the event loop of the process that owns BullMQ job locks. Running it here keeps the
 * parent responsive and lets the parent enforce a timeout with `worker.terminate()`. One thread is
 * used per render, so fonts, images and caches never outlive the document that caused them.
 *
 * PDF.js runs with its in-process "fake worker" (Node has no Web Workers, and this thread already
 * is the off-main-thread worker). The file is not read whole: PDF.js asks for byte ranges through
 * {@link FileRangeTransport}, which serves them from a file handle, so memory follows what the
 * first page needs (cross-reference table, page tree, that page's objects), not the file size.
 *
 * The thread replies with the raw RGBA pixels (transferred, not copied); the parent encodes the
 * PNG with sharp on the libuv pool.
 *
 * Started by `render-preview.ts`; never imported from the main thread.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import type { Canvas, SKRSContext2D } from '@napi-rs/canvas';
import {
  getDocument,
  GlobalWorkerOptions,
  PDFDataRangeTransport,
  VerbosityLevel,
  type PDFDocumentLoadingTask,
} from 'pdfjs-dist/legacy/build/pdf.mjs';

/** Input passed as `workerData`. */
export interface PdfRenderRequest {
  filePath: string;
  /** Longest edge of the output in pixels. */
  size: number;
  /** Re-checked here because the file may have grown since the parent's `stat`. */
  maxBytes: number;
  /** Images embedded in the PDF with more pixels than this are left out rather than decoded. */
  maxImagePixels: number;
}

/** The single message posted back to the parent. `rgba` is width × height × 4 bytes, opaque. */
export type PdfRenderResponse =
  | { ok: true; rgba: Uint8Array; width: number; height: number }
  | { ok: false; unsupported: boolean; message: string };

/** Bytes per range request; also PDF.js's chunk size for its sparse copy of the file. */
const RANGE_CHUNK_SIZE = 64 * 1024;

/**
 * Files shipped inside `pdfjs-dist`, resolved from this module so they are found from `dist/` and
 * from sources alike. PDF.js reads the CMap, standard font and wasm directories with
 * `fs.readFile(dir + name)` in Node, so those are plain paths that must end with a slash.
 */
function pdfjsAssetDirs(): { cMapUrl: string; standardFontDataUrl: string; wasmUrl: string; workerSrc: string } {
  const require = createRequire(import.meta.url);
  const root = dirname(require.resolve('pdfjs-dist/package.json'));
  const dir = (name: string): string => `${join(root, name)}/`;
  return {
    cMapUrl: dir('cmaps'),
    standardFontDataUrl: dir('standard_fonts'),
    wasmUrl: dir('wasm'),
    // PDF.js loads this with `import()`, which wants a URL.
    workerSrc: pathToFileURL(require.resolve('pdfjs-dist/legacy/build/pdf.worker.mjs')).href,
  };
}

/**
 * Serves PDF.js's range requests from an open file handle. PDF.js has no error channel for a
 * range transport (a failed range would just never arrive), so failures reject {@link failed},
 * which the render races against.
 */
class FileRangeTransport extends PDFDataRangeTransport {
  readonly failed: Promise<never>;
  /** Bytes handed to PDF.js so far, for diagnostics and the memory measurements. */
  bytesServed = 0;
  private fail!: (err: Error) => void;

  constructor(
    private readonly file: FileHandle,
    length: number,
  ) {
    super(length, null);
    this.failed = new Promise<never>((_, reject) => {
      this.fail = reject;
    });
    // Without a handler, a failure while nobody races (e.g. after the render finished) would be
    // an unhandled rejection that kills the thread.
    this.failed.catch(() => undefined);
  }

  override requestDataRange(begin: number, end: number): void {
    this.readRange(begin, end).then(
      (chunk) => {
        this.bytesServed += chunk.byteLength;
        this.onDataRange(begin, chunk);
      },
      (err: unknown) => this.fail(err instanceof Error ? err : new Error(String(err))),
    );
  }

  private async readRange(begin: number, end: number): Promise<Uint8Array> {
    const chunk = new Uint8Array(end - begin);
    let filled = 0;
    while (filled < chunk.byteLength) {
      const { bytesRead } = await this.file.read(chunk, filled, chunk.byteLength - filled, begin + filled);
      // The length was fixed when the document was opened; a shorter file means it changed.
      if (bytesRead === 0) throw new Error('PDF file was truncated while it was being read');
      filled += bytesRead;
    }
    return chunk;
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

async function render(req: PdfRenderRequest): Promise<PdfRenderResponse> {
  const file = await open(req.filePath, 'r');
  let task: PDFDocumentLoadingTask | undefined;
  try {
    // Sizing the descriptor we read from avoids a stat/read race with a file that is replaced.
    const { size } = await file.stat();
    if (size > req.maxBytes) return { ok: false, unsupported: true, message: `PDF is larger than ${req.maxBytes} bytes` };
    if (size === 0) return { ok: false, unsupported: false, message: 'PDF file is empty' };

    const assets = pdfjsAssetDirs();
    // Node has no Web Workers, so PDF.js runs its worker code in this thread ("fake worker").
    // Pointing at the file explicitly keeps that working wherever this module is loaded from.
    GlobalWorkerOptions.workerSrc = assets.workerSrc;
    const transport = new FileRangeTransport(file, size);
    task = getDocument({
      range: transport,
      rangeChunkSize: RANGE_CHUNK_SIZE,
      // Fetch only the ranges that are needed, instead of streaming the rest in the background.
      disableAutoFetch: true,
      disableStream: true,
      cMapUrl: assets.cMapUrl,
      cMapPacked: true,
      standardFontDataUrl: assets.standardFontDataUrl,
      wasmUrl: assets.wasmUrl,
      // iccUrl is left out on purpose: PDF.js loads it with a synchronous XMLHttpRequest, which
      // Node lacks; CMYK then falls back to PDF.js's built-in conversion.
      useSystemFonts: false,
      // No FontFace API in Node: glyphs are drawn as paths, which needs no system fonts.
      disableFontFace: true,
      // PDF functions are untrusted input: never compile them with `new Function`.
      isEvalSupported: false,
      enableXfa: false,
      maxImageSize: req.maxImagePixels,
      verbosity: VerbosityLevel.ERRORS,
    });
    const work = renderFirstPage(task, req.size);
    // If the transport fails first, `work` rejects later (on destroy); that is expected.
    work.catch(() => undefined);
    return await Promise.race([work, transport.failed]);
  } catch (err) {
    if (err instanceof Error && err.name === 'PasswordException') {
      return { ok: false, unsupported: false, message: 'PDF is encrypted with a password' };
    }
    throw err;
  } finally {
    // Not awaited: the reply must not wait on PDF.js's teardown, and the parent ends the thread
    // as soon as it has the reply. A range read still in flight then fails harmlessly.
    void task?.destroy().catch(() => undefined);
    await file.close();
  }
}

async function renderFirstPage(task: PDFDocumentLoadingTask, size: number): Promise<PdfRenderResponse> {
  const doc = await task.promise;
  if (doc.numPages < 1) return { ok: false, unsupported: false, message: 'PDF has no pages' };
  const page = await doc.getPage(1);
  // The viewport already applies /Rotate, so the output keeps the page's displayed orientation.
  const unscaled = page.getViewport({ scale: 1 });
  const longest = Math.max(unscaled.width, unscaled.height);
  if (!(longest > 0) || !Number.isFinite(longest)) {
    return { ok: false, unsupported: false, message: 'PDF first page has an empty or invalid size' };
  }
  const viewport = page.getViewport({ scale: size / longest });
  const width = Math.max(1, Math.round(viewport.width));
  const height = Math.max(1, Math.round(viewport.height));
  // Created through the document's factory so PDF.js's scratch canvases (patterns, groups,
  // masks) come from the same @napi-rs/canvas instance as the one they are drawn onto.
  const factory = doc.canvasFactory as { create(w: number, h: number): { canvas: Canvas; context: SKRSContext2D } };
  const { canvas, context } = factory.create(width, height);
  // The default background is opaque white, like a viewer's page. Annotations with appearance
  // streams are painted (AnnotationMode.ENABLE is the default), as a viewer shows them.
  const target = canvas as unknown as Parameters<typeof page.render>[0]['canvas'];
  await page.render({ canvas: target, viewport }).promise;
  const rgba = context.getImageData(0, 0, width, height).data;
  page.cleanup();
  return { ok: true, rgba: new Uint8Array(rgba.buffer, rgba.byteOffset, rgba.byteLength), width, height };
}

if (parentPort) {
  const port = parentPort;
  render(workerData as PdfRenderRequest)
    .catch((err: unknown): PdfRenderResponse => ({ ok: false, unsupported: false, message: errorMessage(err) }))
    .then((response) => {
      // Transfer the pixels instead of cloning them: a 1024² page is 4 MiB.
      port.postMessage(response, response.ok ? [response.rgba.buffer as ArrayBuffer] : []);
    });
}
