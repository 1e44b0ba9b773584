import { PDFDocument, rgb, StandardFontEmbedder, StandardFonts } from 'pdf-lib';

const helvetica = StandardFontEmbedder.for(StandardFonts.Helvetica as never);

/** Text the built-in font can draw: characters outside WinAnsi become `?` (the exact name is in the PDF's title). */
export function drawableText(text: string): string {
  let out = '';
  for (const ch of text) {
    try {
      helvetica.encodeText(ch);
      out += ch;
    } catch {
      out += '?';
    }
  }
  return out;
}

/**
 * `createTestJob`'s document: one A4 page naming the printer, its connection
 * and the time, generated with pdf-lib (DESIGN.md section 7).
 */
export async function testPagePdf(p: { printer: string; connection?: string; at?: Date; user?: string }): Promise<Uint8Array> {
  const at = p.at ?? new Date();
  const doc = await PDFDocument.create();
  doc.setTitle(`Test page: ${p.printer}`);
  doc.setCreator('workflow-connector-runtime');
  doc.setCreationDate(at);
  const page = doc.addPage([595.28, 841.89]);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const line = (text: string, y: number, size = 14, f = font) => page.drawText(drawableText(text).slice(0, 90), { x: 56, y, size, font: f, color: rgb(0, 0, 0) });
  line('Test page', 760, 32, bold);
  line(`Printer: ${p.printer}`, 700, 18, bold);
  if (p.connection) line(`Connection: ${p.connection}`, 670);
  line(`Printed: ${at.toISOString()}`, 645);
  if (p.user) line(`Requested by: ${p.user}`, 620);
  // a frame and a scale show cropping and scaling at a glance
  page.drawRectangle({ x: 28, y: 28, width: 595.28 - 56, height: 841.89 - 56, borderColor: rgb(0, 0, 0), borderWidth: 1 });
  for (let mm = 0; mm <= 150; mm += 10) {
    const x = 56 + (mm * 72) / 25.4;
    page.drawLine({ start: { x, y: 100 }, end: { x, y: mm % 50 === 0 ? 115 : 108 }, thickness: 0.7 });
  }
  line('0 - 150 mm', 120, 8);
  return doc.save();
}
