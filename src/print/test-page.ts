import { Readable } from 'node:stream';
import { PDFDocument, StandardFonts, rgb } from 'pdf-lib';

export interface TestPageInfo {
  printer: string;
  connection: string;
  user: string;
  date: Date;
}

/** WinAnsi (the standard fonts' encoding) cannot show every Unicode name: others become '?'. */
const printable = (s: string) => s.normalize('NFC').replace(/[^\x20-\x7e\u00a0-\u00ff]/g, '?');

/**
 * The one-page A4 PDF `createTestJob` prints: the printer's name, its
 * connection, who asked and when, plus a frame and a scale to check margins.
 * Generated with pdf-lib; a few kilobytes, so it is made in memory.
 */
export async function testPage(info: TestPageInfo): Promise<Readable> {
  const doc = await PDFDocument.create();
  doc.setTitle(`Test page: ${info.printer}`);
  doc.setCreator('workflow connector runtime');
  doc.setCreationDate(info.date);
  const page = doc.addPage([595.28, 841.89]);
  const font = await doc.embedFont(StandardFonts.Helvetica);
  const bold = await doc.embedFont(StandardFonts.HelveticaBold);
  const { width, height } = page.getSize();
  page.drawRectangle({ x: 28, y: 28, width: width - 56, height: height - 56, borderColor: rgb(0, 0, 0), borderWidth: 1 });
  page.drawText('Test page', { x: 60, y: height - 110, size: 36, font: bold });
  const lines: [string, string][] = [
    ['Printer', info.printer],
    ['Connection', info.connection],
    ['Requested by', info.user],
    ['Time', info.date.toISOString()],
  ];
  lines.forEach(([k, v], i) => {
    const y = height - 170 - i * 28;
    page.drawText(`${k}:`, { x: 60, y, size: 14, font: bold });
    page.drawText(printable(v).slice(0, 70), { x: 180, y, size: 14, font });
  });
  // a 10 cm scale: measures what the device does to the size
  const cm = 72 / 2.54;
  page.drawLine({ start: { x: 60, y: 200 }, end: { x: 60 + 10 * cm, y: 200 }, thickness: 1 });
  for (let i = 0; i <= 10; i += 1) page.drawLine({ start: { x: 60 + i * cm, y: 200 }, end: { x: 60 + i * cm, y: i % 5 === 0 ? 212 : 206 }, thickness: 1 });
  page.drawText('10 cm', { x: 60, y: 180, size: 10, font });
  const colours = [rgb(0, 1, 1), rgb(1, 0, 1), rgb(1, 1, 0), rgb(0, 0, 0)];
  colours.forEach((color, i) => page.drawRectangle({ x: 60 + i * 60, y: 100, width: 50, height: 50, color }));
  return Readable.from([Buffer.from(await doc.save())]);
}
