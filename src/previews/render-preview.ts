/**
 * Preview and thumbnail rendering for the background worker that runs after a document's
 * content changes. PDFs are rasterised with PDF.js onto @napi-rs/canvas in a worker thread (see
 * `pdf-render-thread.ts`), which reads the file by byte ranges instead of loading it whole; raster
 * images go through sharp, which streams from the file path on the libuv thread pool, so neither
 * path blocks the event loop.
 */
import { stat } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import sharp from 'sharp';
import { threadEntry, type ThreadEntry } from '../threads/thread-entry.js';
import type { PdfRenderRequest, PdfRenderResponse } from './pdf-render-thread.js';

/** A rendered preview and thumbnail, both PNG. `width`/`height` are the preview's pixels. */
export interface RenderedPreview {
  preview: Buffer;
  thumb: Buffer;
  width: number;
  height: number;
}

/** Rendering limits; every field is optional and has a conservative default. */
export interface RenderOptions {
  /** Longest edge of the preview in pixels (images are never enlarged). Default 1024. */
  previewSize?: number;
  /** Longest edge of the thumbnail in pixels. Default 128. */
  thumbSize?: number;
  /**
   * PDFs above this size are refused. A sanity cap: the renderer reads only the byte ranges the
   * first page needs, so memory does not grow with the file, but PDF.js reserves (without
   * touching) an address range as long as the file. Default 256 MiB.
   */
  maxPdfBytes?: number;
  /**
   * Images whose header declares more pixels than this are refused (decompression bombs).
   * Images embedded in a PDF above it are left out of the PDF's preview instead of being decoded.
   * Default 268402689 (sharp's default, 16383²).
   */
  maxInputPixels?: number;
  /** Upper bound for one render; the PDF thread is terminated when it is exceeded. Default 60 s. */
  timeoutMs?: number;
}

/** Thrown when a file cannot get a preview by design (type, size or pixel limits); retrying will not help. */
export class UnsupportedPreviewError extends Error {
  readonly code = 'PREVIEW_UNSUPPORTED';
  override readonly name = 'UnsupportedPreviewError';
}

const PDF_TYPE = 'application/pdf';

/**
 * Declared MIME type → sharp format names accepted for it. The decoder is chosen by sharp from
 * the file content, so the check after `metadata()` is what actually keeps other decoders
 * (notably SVG via librsvg, which can reference external files) away from untrusted input.
 */
const IMAGE_TYPES: ReadonlyMap<string, string> = new Map([
  ['image/png', 'png'],
  ['image/jpeg', 'jpeg'],
  ['image/jpg', 'jpeg'],
  ['image/gif', 'gif'],
  ['image/webp', 'webp'],
  ['image/tiff', 'tiff'],
  ['image/avif', 'heif'],
]);
const RASTER_FORMATS = new Set(IMAGE_TYPES.values());

const DEFAULTS = {
  previewSize: 1024,
  thumbSize: 128,
  maxPdfBytes: 256 * 1024 * 1024,
  maxInputPixels: 0x3fff * 0x3fff,
  timeoutMs: 60_000,
} satisfies Required<RenderOptions>;

function normaliseType(mimeType: string): string {
  // Stored types may carry parameters or odd casing ("Image/PNG; q=1").
  return (mimeType.split(';')[0] ?? '').trim().toLowerCase();
}

/** Whether {@link renderPreview} handles this MIME type (parameters and case are ignored). */
export function canRenderPreview(mimeType: string): boolean {
  const type = normaliseType(mimeType);
  return type === PDF_TYPE || IMAGE_TYPES.has(type);
}

/**
 * Renders a PNG preview (longest edge ≤ `previewSize`) and thumbnail (≤ `thumbSize`) of the
 * first page of a PDF or of a raster image.
 *
 * @throws {UnsupportedPreviewError} for unsupported types, PDFs above `maxPdfBytes` and images
 *   above `maxInputPixels`.
 * @throws {Error} for corrupt, encrypted or unreadable files and on timeout.
 */
export async function renderPreview(filePath: string, mimeType: string, opts: RenderOptions = {}, signal?: AbortSignal): Promise<RenderedPreview> {
  const o = resolveOptions(opts);
  const type = normaliseType(mimeType);
  signal?.throwIfAborted();
  if (type === PDF_TYPE) return renderPdf(filePath, o, signal);
  if (IMAGE_TYPES.has(type)) return renderImage(filePath, type, o);
  throw new UnsupportedPreviewError(`No preview renderer for type "${mimeType}"`);
}

function resolveOptions(opts: RenderOptions): Required<RenderOptions> {
  const o = { ...DEFAULTS };
  for (const key of Object.keys(DEFAULTS) as (keyof RenderOptions)[]) {
    const value = opts[key];
    if (value === undefined) continue;
    // Fail fast on nonsense limits: NaN or 0 would otherwise disable a safety check silently.
    if (!Number.isInteger(value) || value <= 0) throw new RangeError(`RenderOptions.${key} must be a positive integer`);
    o[key] = value;
  }
  return o;
}

async function renderImage(filePath: string, type: string, o: Required<RenderOptions>): Promise<RenderedPreview> {
  const input = { limitInputPixels: o.maxInputPixels };
  try {
    // metadata() reads only the header: cheap, and it lets us refuse formats before decoding.
    const { format } = await sharp(filePath, input).metadata();
    if (!RASTER_FORMATS.has(format)) {
      throw new UnsupportedPreviewError(`File declared as ${type} contains ${format} data, which is not previewed`);
    }
    const { data, info } = await sharp(filePath, input)
      .rotate() // no angle: apply the EXIF orientation so portrait photos are not sideways
      .resize({ width: o.previewSize, height: o.previewSize, fit: 'inside', withoutEnlargement: true })
      .png()
      .timeout({ seconds: Math.ceil(o.timeoutMs / 1000) })
      .toBuffer({ resolveWithObject: true });
    return { preview: data, thumb: await makeThumb(data, o.thumbSize), width: info.width, height: info.height };
  } catch (err) {
    if (err instanceof UnsupportedPreviewError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    // sharp reports the pixel limit as a plain Error; it is a policy refusal, not a failure.
    if (/exceeds pixel limit/i.test(message)) {
      throw new UnsupportedPreviewError(`Image exceeds ${o.maxInputPixels} pixels`, { cause: err });
    }
    throw new Error(`Cannot render preview of ${type} file: ${message}`, { cause: err });
  }
}

function makeThumb(preview: Buffer, size: number): Promise<Buffer> {
  // Downscaling the already-decoded preview is much cheaper than decoding the source again.
  return sharp(preview)
    .resize({ width: size, height: size, fit: 'inside', withoutEnlargement: true })
    .png()
    .toBuffer();
}

async function renderPdf(filePath: string, o: Required<RenderOptions>, signal?: AbortSignal): Promise<RenderedPreview> {
  // Checked here too so oversized files never cost a thread start; the thread re-checks.
  const { size } = await stat(filePath);
  if (size > o.maxPdfBytes) throw new UnsupportedPreviewError(`PDF is ${size} bytes, above the ${o.maxPdfBytes} byte limit`);
  const req: PdfRenderRequest = { filePath, size: o.previewSize, maxBytes: o.maxPdfBytes, maxImagePixels: o.maxInputPixels };
  const { rgba, width, height } = await runPdfThread(req, o.timeoutMs, signal);
  // The page was painted onto opaque white, so the alpha channel carries nothing. Encoding here
  // runs on sharp's libuv pool, not on the event loop.
  const preview = await sharp(rgba, { raw: { width, height, channels: 4 } }).removeAlpha().png().toBuffer();
  return { preview, thumb: await makeThumb(preview, o.thumbSize), width, height };
}

type PdfRenderSuccess = Extract<PdfRenderResponse, { ok: true }>;

/** Renders in a thread of its own, terminated on timeout or when `signal` aborts (the worker is stopping). */
function runPdfThread(req: PdfRenderRequest, timeoutMs: number, signal?: AbortSignal): Promise<PdfRenderSuccess> {
  const entry = pdfThreadEntry();
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new Error(`PDF preview rendering stopped: ${String(signal.reason)}`));
      return;
    }
    const worker = new Worker(entry.script, { workerData: req, eval: entry.eval === true });
    let settled = false;
    const finish = (err: Error | undefined, value?: PdfRenderSuccess): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      // terminate() also interrupts JavaScript (or WASM) that is still running (the timeout case).
      void worker.terminate();
      if (err) reject(err);
      else resolve(value as PdfRenderSuccess);
    };
    const timer = setTimeout(() => finish(new Error(`PDF preview rendering timed out after ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => finish(new Error(`PDF preview rendering stopped: ${String(signal?.reason)}`));
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.once('message', (msg: PdfRenderResponse) => {
      if (msg.ok) finish(undefined, msg);
      else if (msg.unsupported) finish(new UnsupportedPreviewError(msg.message));
      else finish(new Error(`Cannot render PDF preview: ${msg.message}`));
    });
    worker.once('error', (err) => finish(new Error(`PDF render thread failed: ${err.message}`, { cause: err })));
    worker.once('exit', (code) => finish(new Error(`PDF render thread exited with code ${code} before replying`)));
  });
}

let cachedEntry: ThreadEntry | undefined;

/** The PDF thread's script (see `threadEntry`). */
function pdfThreadEntry(): ThreadEntry {
  return (cachedEntry ??= threadEntry(new URL('./pdf-render-thread.js', import.meta.url)));
}
