import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PageSizes, PDFDocument, rgb, StandardFonts } from 'pdf-lib';
import sharp, { type Sharp } from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canRenderPreview, renderPreview, UnsupportedPreviewError } from '../../src/previews/render-preview.js';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'render-preview-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Two pages: A4 portrait with a red top half, then A4 landscape, so page 1 is identifiable. */
async function twoPagePdf(): Promise<Uint8Array> {
  const doc = await PDFDocument.create();
  const [w, h] = PageSizes.A4;
  const first = doc.addPage([w, h]);
  first.drawRectangle({ x: 0, y: h / 2, width: w, height: h / 2, color: rgb(1, 0, 0) });
  const second = doc.addPage([h, w]);
  second.drawRectangle({ x: 0, y: 0, width: h, height: w, color: rgb(0, 0, 1) });
  return doc.save();
}

async function writeFixture(name: string, data: Uint8Array | Buffer | string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, data);
  return path;
}

async function pngInfo(buf: Buffer): Promise<{ width: number; height: number; format: string }> {
  expect(buf.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
  const meta = await sharp(buf).metadata();
  return { width: meta.width, height: meta.height, format: meta.format };
}

async function pixel(buf: Buffer, x: number, y: number): Promise<number[]> {
  const { data, info } = await sharp(buf).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const at = (y * info.width + x) * info.channels;
  return [...data.subarray(at, at + 3)];
}

describe('canRenderPreview', () => {
  it('accepts PDFs and raster images, ignoring case and parameters', () => {
    expect(canRenderPreview('application/pdf')).toBe(true);
    expect(canRenderPreview('Image/PNG; foo=bar')).toBe(true);
    expect(canRenderPreview('image/avif')).toBe(true);
    expect(canRenderPreview('image/svg+xml')).toBe(false);
    expect(canRenderPreview('text/plain')).toBe(false);
  });
});

describe('renderPreview: PDF', () => {
  it('renders the first page (A4 portrait) in a worker thread', async () => {
    const path = await writeFixture('doc.pdf', await twoPagePdf());
    const result = await renderPreview(path, 'application/pdf');

    const preview = await pngInfo(result.preview);
    expect(preview).toMatchObject({ width: result.width, height: result.height, format: 'png' });
    expect(result.height).toBe(1024);
    expect(Math.abs(result.width / result.height - PageSizes.A4[0] / PageSizes.A4[1])).toBeLessThan(0.005);

    const thumb = await pngInfo(result.thumb);
    expect(thumb.height).toBe(128);
    expect(thumb.width).toBeLessThan(128);
    expect(Math.abs(thumb.width / thumb.height - result.width / result.height)).toBeLessThan(0.02);

    // Page 1 content: red top half, white bottom half (page 2 would be blue).
    expect(await pixel(result.preview, Math.floor(result.width / 2), 10)).toEqual([255, 0, 0]);
    expect(await pixel(result.preview, Math.floor(result.width / 2), result.height - 10)).toEqual([255, 255, 255]);
  });

  it('honours previewSize and thumbSize', async () => {
    const path = await writeFixture('doc.pdf', await twoPagePdf());
    const result = await renderPreview(path, 'application/pdf', { previewSize: 300, thumbSize: 64 });
    expect(Math.max(result.width, result.height)).toBe(300);
    const thumb = await pngInfo(result.thumb);
    expect(Math.max(thumb.width, thumb.height)).toBe(64);
  });

  it('refuses PDFs above maxPdfBytes with UnsupportedPreviewError', async () => {
    const path = await writeFixture('doc.pdf', await twoPagePdf());
    const err = await renderPreview(path, 'application/pdf', { maxPdfBytes: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedPreviewError);
    expect((err as UnsupportedPreviewError).code).toBe('PREVIEW_UNSUPPORTED');
  });

  it('rejects a corrupt PDF with a plain Error and keeps working afterwards', async () => {
    const bad = await writeFixture('bad.pdf', 'this is not a PDF at all\n'.repeat(50));
    const err = await renderPreview(bad, 'application/pdf').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UnsupportedPreviewError);
    expect((err as Error).message).toMatch(/Cannot render PDF preview/);

    // The process (and the next render) survive the failure.
    const good = await writeFixture('good.pdf', await twoPagePdf());
    expect((await renderPreview(good, 'application/pdf')).height).toBe(1024);
  });

  it('rejects a password-protected PDF with a clear Error', async () => {
    // AES-256, user password "secret", owner password "owner"; made once with mupdf's
    // `saveToBuffer('encrypt=aes-256,user-password=secret,owner-password=owner,compress')`.
    const path = fileURLToPath(new URL('../fixtures/encrypted.pdf', import.meta.url));
    const err = await renderPreview(path, 'application/pdf').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UnsupportedPreviewError);
    expect((err as Error).message).toMatch(/encrypted with a password/);
  });

  it('renders text in a standard font from the bundled font data', async () => {
    // Helvetica is not embedded by pdf-lib, so this needs PDF.js's standard font data.
    const doc = await PDFDocument.create();
    const page = doc.addPage([400, 200]);
    const font = await doc.embedFont(StandardFonts.HelveticaBold);
    page.drawText('HHHH', { x: 20, y: 50, size: 120, font, color: rgb(0, 0, 0) });
    const path = await writeFixture('text.pdf', await doc.save());
    const result = await renderPreview(path, 'application/pdf', { previewSize: 400 });
    expect(result).toMatchObject({ width: 400, height: 200 });

    const { data, info } = await sharp(result.preview).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const darkIn = (x0: number, y0: number, x1: number, y1: number): number => {
      let dark = 0;
      for (let y = y0; y < y1; y++) {
        for (let x = x0; x < x1; x++) {
          const at = (y * info.width + x) * info.channels;
          if ((data[at] ?? 255) < 64 && (data[at + 1] ?? 255) < 64 && (data[at + 2] ?? 255) < 64) dark++;
        }
      }
      return dark;
    };
    const darkInRow = (y: number): number => darkIn(0, y, info.width, y + 1);
    // The glyphs sit between y = 50 and about 50 + 0.72 × 120 in PDF space (origin bottom left):
    // rows 64..150 of the 200-pixel-high preview. Bold "H" stems fill a good share of that box.
    expect(darkIn(20, 64, 360, 150)).toBeGreaterThan((360 - 20) * (150 - 64) * 0.2);
    // Above the cap height and below the baseline the page stays white.
    expect(darkIn(0, 0, 400, 40)).toBe(0);
    expect(darkIn(0, 160, 400, 200)).toBe(0);
    // Sans-serif stems: as wide just above the baseline as below the crossbar. Without the
    // standard font data PDF.js falls back to whatever the canvas has (a serif face here, nothing
    // on a machine without system fonts), and serifs would widen the bottom row.
    const belowCrossbar = darkInRow(130);
    expect(belowCrossbar).toBeGreaterThan(0);
    expect(Math.abs(darkInRow(146) - belowCrossbar)).toBeLessThanOrEqual(belowCrossbar * 0.1);
  });

  it('times out and terminates the render thread', async () => {
    const path = await writeFixture('doc.pdf', await twoPagePdf());
    await expect(renderPreview(path, 'application/pdf', { timeoutMs: 1 })).rejects.toThrow(/timed out after 1 ms/);
  });

  it('stops when its signal aborts (the worker shutting down): the thread is terminated, nothing is returned', async () => {
    const path = await writeFixture('doc.pdf', await twoPagePdf());
    const stop = new AbortController();
    const render = renderPreview(path, 'application/pdf', {}, stop.signal);
    stop.abort('shutdown');
    await expect(render).rejects.toThrow(/rendering stopped: shutdown/);
    // aborted before it starts: no thread at all
    await expect(renderPreview(path, 'application/pdf', {}, stop.signal)).rejects.toThrow();
  });
});

describe('renderPreview: images', () => {
  const wide = (): Sharp =>
    sharp({ create: { width: 3000, height: 1000, channels: 3, background: { r: 0, g: 128, b: 255 } } });

  it.each([
    ['image/png', 'wide.png', () => wide().png()],
    ['image/jpeg', 'wide.jpg', () => wide().jpeg()],
  ])('downscales a 3000x1000 %s to fit', async (type, name, make) => {
    const path = await writeFixture(name, await make().toBuffer());
    const result = await renderPreview(path, type);
    expect(await pngInfo(result.preview)).toMatchObject({ width: 1024, height: 341 });
    expect(result).toMatchObject({ width: 1024, height: 341 });
    expect(await pngInfo(result.thumb)).toMatchObject({ width: 128, height: 43 });
  });

  it('does not enlarge small images', async () => {
    const small = await sharp({ create: { width: 200, height: 100, channels: 3, background: '#fff' } }).webp().toBuffer();
    const path = await writeFixture('small.webp', small);
    const result = await renderPreview(path, 'image/webp');
    expect(result).toMatchObject({ width: 200, height: 100 });
    expect(await pngInfo(result.thumb)).toMatchObject({ width: 128, height: 64 });
  });

  it('applies EXIF orientation', async () => {
    const rotated = await sharp({ create: { width: 300, height: 100, channels: 3, background: '#000' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const path = await writeFixture('rotated.jpg', rotated);
    expect(await renderPreview(path, 'image/jpeg')).toMatchObject({ width: 100, height: 300 });
  });

  it('refuses images above maxInputPixels with UnsupportedPreviewError', async () => {
    const path = await writeFixture('wide.png', await wide().png().toBuffer());
    await expect(renderPreview(path, 'image/png', { maxInputPixels: 1_000_000 })).rejects.toBeInstanceOf(UnsupportedPreviewError);
  });

  it('refuses SVG content even when declared as a raster type', async () => {
    const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';
    const path = await writeFixture('sneaky.png', svg);
    await expect(renderPreview(path, 'image/png')).rejects.toBeInstanceOf(UnsupportedPreviewError);
  });

  it('rejects a corrupt image with a plain Error', async () => {
    const path = await writeFixture('bad.png', 'garbage');
    const err = await renderPreview(path, 'image/png').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(UnsupportedPreviewError);
  });
});

describe('renderPreview: other input', () => {
  it('throws UnsupportedPreviewError for unsupported types', async () => {
    const path = await writeFixture('notes.txt', 'hello');
    const err = await renderPreview(path, 'text/plain').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UnsupportedPreviewError);
    expect((err as UnsupportedPreviewError).code).toBe('PREVIEW_UNSUPPORTED');
  });

  it('rejects invalid limits', async () => {
    await expect(renderPreview(join(dir, 'x.png'), 'image/png', { previewSize: 0 })).rejects.toBeInstanceOf(RangeError);
  });
});
