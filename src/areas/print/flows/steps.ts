import { degrees, PDFDocument, rgb, StandardFontEmbedder, StandardFonts, type PDFPage } from 'pdf-lib';
import { z } from 'zod';
import { parsePageRange, selectPages, type PageSpan } from './page-range.js';

/**
 * The fixed catalogue of flow steps (DESIGN.md section 7): data, not code a
 * user sends. A flow names steps by `use` and configures them with `with`,
 * which the step's zod schema checks when the flow is stored and again
 * before it runs. Nothing in a flow is ever evaluated.
 *
 * Each step turns one stage (a file) into the next. `imageToPdf` reads an
 * image; every other step reads and writes a PDF, through pdf-lib.
 */

/** Paper sizes in millimetres, portrait. */
export const MEDIA_MM = {
  A3: [297, 420],
  A4: [210, 297],
  A5: [148, 210],
  Letter: [215.9, 279.4],
  Legal: [215.9, 355.6],
} as const satisfies Record<string, readonly [number, number]>;

const MM = 72 / 25.4;

const pageRange = z.string().max(200).superRefine((v, ctx) => {
  const r = parsePageRange(v);
  if ('problem' in r) ctx.addIssue({ code: 'custom', message: r.problem });
});
const spansOf = (v: string | undefined): PageSpan[] | undefined => {
  if (v === undefined) return undefined;
  const r = parsePageRange(v);
  if ('problem' in r) throw new Error(r.problem);
  return r.spans;
};

const media = z.enum([...Object.keys(MEDIA_MM) as (keyof typeof MEDIA_MM)[], 'custom']);
const mediaWith = z.strictObject({
  media,
  /** Millimetres, for `custom` only. */
  width: z.number().min(10).max(5000).optional(),
  height: z.number().min(10).max(5000).optional(),
  /** `auto` follows each page: a landscape page gets landscape paper. */
  orientation: z.enum(['auto', 'portrait', 'landscape']).default('auto'),
}).superRefine((v, ctx) => {
  if (v.media === 'custom' && (v.width === undefined || v.height === undefined)) ctx.addIssue({ code: 'custom', message: 'media custom needs width and height in mm' });
  if (v.media !== 'custom' && (v.width !== undefined || v.height !== undefined)) ctx.addIssue({ code: 'custom', message: 'width and height are for media custom only' });
});
type MediaWith = z.infer<typeof mediaWith>;

/** The built-in font draws WinAnsi text only; a stamp it cannot draw is refused when the flow is stored, not at print time. */
const helvetica = StandardFontEmbedder.for(StandardFonts.Helvetica as never);
const drawable = (text: string) => {
  try {
    helvetica.encodeText(text);
    return true;
  } catch {
    return false;
  }
};

const POSITIONS = ['top-left', 'top-center', 'top-right', 'center', 'bottom-left', 'bottom-center', 'bottom-right'] as const;

/** Page size in points for a media choice and a source page of `w` x `h` points. */
export function mediaSize(m: MediaWith, w: number, h: number): [number, number] {
  const [mw, mh] = m.media === 'custom' ? [m.width!, m.height!] : MEDIA_MM[m.media];
  const short = Math.min(mw, mh) * MM;
  const long = Math.max(mw, mh) * MM;
  const landscape = m.orientation === 'landscape' || (m.orientation === 'auto' && w > h);
  return landscape ? [long, short] : [short, long];
}

/** A step that transforms a loaded PDF; it may return a new document. */
interface PdfStep<S extends z.ZodType> {
  readonly input: 'pdf';
  readonly description: string;
  readonly schema: S;
  apply(doc: PDFDocument, w: z.output<S>): Promise<PDFDocument>;
}
/** A step that turns an image (PNG or JPEG bytes) into a PDF. */
interface ImageStep<S extends z.ZodType> {
  readonly input: 'image';
  readonly description: string;
  readonly schema: S;
  apply(image: { bytes: Buffer; format: 'png' | 'jpeg'; width: number; height: number; density: number }, w: z.output<S>): Promise<PDFDocument>;
}
type Step<S extends z.ZodType = z.ZodType> = PdfStep<S> | ImageStep<S>;
const pdfStep = <S extends z.ZodType>(s: Omit<PdfStep<S>, 'input'>): PdfStep<S> => ({ input: 'pdf', ...s });
const imageStep = <S extends z.ZodType>(s: Omit<ImageStep<S>, 'input'>): ImageStep<S> => ({ input: 'image', ...s });

const pagesOf = (doc: PDFDocument, spans: PageSpan[] | undefined): PDFPage[] => {
  const all = doc.getPages();
  return spans ? selectPages(spans, all.length).map((i) => all[i]!) : all;
};

export const FLOW_STEPS = {
  imageToPdf: imageStep({
    description: 'An image (PNG, JPEG; other formats are converted to PNG first) becomes a one-page PDF; a PDF passes unchanged',
    schema: z.strictObject({
      /** Page the image is fitted on, centred; without it the page is the image at its resolution. */
      media: mediaWith.optional(),
      /** Resolution when the image does not say (pixels per inch). */
      dpi: z.number().min(10).max(4800).optional(),
    }),
    async apply(image, w) {
      const doc = await PDFDocument.create();
      const embedded = image.format === 'png' ? await doc.embedPng(image.bytes) : await doc.embedJpg(image.bytes);
      const dpi = w.dpi ?? (image.density > 0 ? image.density : 72);
      const iw = (image.width / dpi) * 72;
      const ih = (image.height / dpi) * 72;
      const [pw, ph] = w.media ? mediaSize(w.media, iw, ih) : [iw, ih];
      const scale = Math.min(pw / iw, ph / ih);
      const page = doc.addPage([pw, ph]);
      page.drawImage(embedded, { x: (pw - iw * scale) / 2, y: (ph - ih * scale) / 2, width: iw * scale, height: ih * scale });
      return doc;
    },
  }),
  rotate: pdfStep({
    description: 'Rotates pages clockwise by 90, 180 or 270 degrees',
    schema: z.strictObject({
      degrees: z.union([z.literal(90), z.literal(180), z.literal(270), z.literal(-90)]),
      pages: pageRange.optional(),
    }),
    async apply(doc, w) {
      for (const page of pagesOf(doc, spansOf(w.pages))) page.setRotation(degrees((((page.getRotation().angle + w.degrees) % 360) + 360) % 360));
      return doc;
    },
  }),
  scaleToMedia: pdfStep({
    description: 'Scales every page to fit a paper size (A3, A4, A5, Letter, Legal or custom mm), centred, keeping proportions',
    schema: mediaWith,
    async apply(doc, w) {
      const out = await PDFDocument.create();
      const pages = doc.getPages();
      const embedded = await out.embedPages(pages);
      embedded.forEach((e, i) => {
        const rotation = pages[i]!.getRotation().angle;
        const [pw, ph] = mediaSize(w, e.width, e.height);
        const scale = Math.min(pw / e.width, ph / e.height);
        const page = out.addPage([pw, ph]);
        page.drawPage(e, { x: (pw - e.width * scale) / 2, y: (ph - e.height * scale) / 2, xScale: scale, yScale: scale });
        if (rotation) page.setRotation(degrees(rotation));
      });
      return out;
    },
  }),
  stampText: pdfStep({
    description: 'Draws a line of text on pages (Helvetica, WinAnsi characters)',
    schema: z.strictObject({
      text: z.string().min(1).max(500).refine((t) => !/[\r\n]/.test(t), 'one line, no line breaks').refine(drawable, 'has characters the built-in font cannot draw (WinAnsi only)'),
      position: z.enum(POSITIONS).default('bottom-right'),
      size: z.number().min(4).max(144).default(10),
      /** Grey level 0 (black) to 1 (white). */
      gray: z.number().min(0).max(1).default(0),
      pages: pageRange.optional(),
    }),
    async apply(doc, w) {
      const font = await doc.embedFont(StandardFonts.Helvetica);
      const tw = font.widthOfTextAtSize(w.text, w.size);
      const margin = 18;
      for (const page of pagesOf(doc, spansOf(w.pages))) {
        const { width, height } = page.getSize();
        const [v, hz] = w.position === 'center' ? ['center', 'center'] : w.position.split('-') as [string, string];
        const x = hz === 'left' ? margin : hz === 'right' ? width - margin - tw : (width - tw) / 2;
        const y = v === 'top' ? height - margin - w.size : v === 'bottom' ? margin : (height - w.size) / 2;
        page.drawText(w.text, { x, y, size: w.size, font, color: rgb(w.gray, w.gray, w.gray) });
      }
      return doc;
    },
  }),
  pageRange: pdfStep({
    description: 'Keeps only the pages of a range such as "1-3,5" or "7-", in that order',
    schema: z.strictObject({ pages: pageRange }),
    async apply(doc, w) {
      const keep = selectPages(spansOf(w.pages)!, doc.getPageCount());
      if (keep.length === 0) throw new FlowStepError(`page range "${w.pages}" selects none of the document's ${doc.getPageCount()} pages`);
      const out = await PDFDocument.create();
      for (const p of await out.copyPages(doc, keep)) out.addPage(p);
      return out;
    },
  }),
} as const satisfies Record<string, Step<z.ZodType>>;

export type StepName = keyof typeof FLOW_STEPS;
export const STEP_NAMES = Object.keys(FLOW_STEPS) as StepName[];
export const isStepName = (name: string): name is StepName => Object.hasOwn(FLOW_STEPS, name);

/** A step that cannot do its work on this document (the job fails with this message). */
export class FlowStepError extends Error {
  override readonly name = 'FlowStepError';
}
