/**
 * Worker-thread entry point that rasterises the first page of a PDF with mupdf.
 *
 * mupdf's WASM API is synchronous and a complex page can take seconds, which would stall the
 * event loop of the process that owns BullMQ job locks. Running it here keeps the parent
 * responsive and lets the parent enforce a timeout with `worker.terminate()`. One thread is used
 * per render so a leaking or corrupted WASM heap never outlives the document that caused it.
 *
 * Started by `render-preview.ts`; never imported from the main thread.
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import * as mupdf from 'mupdf';

/** Input passed as `workerData`. */
export interface PdfRenderRequest {
  filePath: string;
  /** Longest edge of the output in pixels. */
  size: number;
  /** Re-checked here because the file may have grown since the parent's `stat`. */
  maxBytes: number;
}

/** The single message posted back to the parent. */
export type PdfRenderResponse =
  | { ok: true; png: Uint8Array; width: number; height: number }
  | { ok: false; unsupported: boolean; message: string };

function readLimited(filePath: string, maxBytes: number): Buffer | undefined {
  // Reading through the same descriptor we sized avoids a stat/read race with a growing file.
  const fd = openSync(filePath, 'r');
  try {
    if (fstatSync(fd).size > maxBytes) return undefined;
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function render(req: PdfRenderRequest): PdfRenderResponse {
  const data = readLimited(req.filePath, req.maxBytes);
  if (!data) {
    return { ok: false, unsupported: true, message: `PDF is larger than ${req.maxBytes} bytes` };
  }
  const doc = mupdf.Document.openDocument(data, 'application/pdf');
  try {
    if (doc.needsPassword()) return { ok: false, unsupported: false, message: 'PDF is encrypted with a password' };
    if (doc.countPages() < 1) return { ok: false, unsupported: false, message: 'PDF has no pages' };
    const page = doc.loadPage(0);
    try {
      // getBounds() already reflects /Rotate, so the output keeps the page's displayed orientation.
      const [x0, y0, x1, y1] = page.getBounds();
      const longest = Math.max(x1 - x0, y1 - y0);
      if (!(longest > 0) || !Number.isFinite(longest)) {
        return { ok: false, unsupported: false, message: 'PDF first page has an empty or invalid size' };
      }
      const scale = req.size / longest;
      // alpha=false renders onto white like a viewer would; showExtras=true includes annotations.
      const pixmap = page.toPixmap(mupdf.Matrix.scale(scale, scale), mupdf.ColorSpace.DeviceRGB, false, true);
      try {
        return { ok: true, png: pixmap.asPNG(), width: pixmap.getWidth(), height: pixmap.getHeight() };
      } finally {
        pixmap.destroy();
      }
    } finally {
      page.destroy();
    }
  } finally {
    doc.destroy();
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

if (parentPort) {
  // Keep mupdf's latest warnings for the error message instead of spilling them onto stderr.
  const diagnostics: string[] = [];
  mupdf.setLog((message: string) => {
    diagnostics.push(message.trim());
    if (diagnostics.length > 3) diagnostics.shift();
  });
  let response: PdfRenderResponse;
  try {
    response = render(workerData as PdfRenderRequest);
  } catch (err) {
    // mupdf's own log usually names the real problem (e.g. "cannot find startxref").
    const detail = diagnostics.length > 0 ? ` (${diagnostics.join('; ')})` : '';
    response = { ok: false, unsupported: false, message: `${errorMessage(err)}${detail}` };
  }
  parentPort.postMessage(response);
}
