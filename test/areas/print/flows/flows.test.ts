import { mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs';
import sharp from 'sharp';
import { beforeAll, describe, expect, it } from 'vitest';
import { runFlow } from '../../../../src/areas/print/flows/run-flow.js';
import { STEP_NAMES } from '../../../../src/areas/print/flows/steps.js';
import { validateFlow } from '../../../../src/areas/print/flows/validate-flow.js';
import { tempDir } from '../../../helpers/fs.js';

let dir: string;
beforeAll(async () => {
  dir = await tempDir('wcr-flows-');
});

/** A real PDF of `n` pages, each saying "page <i>", in points `w` x `h`. */
async function pdfFile(name: string, n: number, [w, h] = [400, 600]): Promise<string> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 1; i <= n; i++) doc.addPage([w, h]).drawText(`page ${i}`, { x: 50, y: 50, size: 20, font });
  const file = path.join(dir, name);
  await writeFile(file, await doc.save());
  return file;
}

const load = async (file: string) => PDFDocument.load(await readFile(file));
async function textOf(file: string): Promise<string[]> {
  const pdf = await getDocument({ data: new Uint8Array(await readFile(file)), verbosity: 0 }).promise;
  const pages: string[] = [];
  for (let i = 1; i <= pdf.numPages; i++) {
    const content = await (await pdf.getPage(i)).getTextContent();
    pages.push(content.items.map((it) => ('str' in it ? it.str : '')).join(' '));
  }
  await pdf.destroy();
  return pages;
}
const work = () => mkdtemp(path.join(dir, 'work-'));
const flow = (steps: unknown[]) => validateFlow({ name: 'f', steps }).steps;

describe('validateFlow', () => {
  it('accepts every catalogue step with its defaults filled in', () => {
    const f = validateFlow({
      name: 'all', description: 'd', steps: [
        { use: 'imageToPdf', with: { media: { media: 'A4' } } },
        { use: 'rotate', with: { degrees: 90, pages: '1-3,5' } },
        { use: 'scaleToMedia', with: { media: 'custom', width: 100, height: 150 } },
        { use: 'stampText', with: { text: 'COPY' } },
        { use: 'pageRange', with: { pages: '2-' } },
      ],
    });
    expect(f.type).toBe('custom');
    expect(f.steps.map((s) => s.use)).toEqual(STEP_NAMES);
    expect(f.steps[3]!.with).toMatchObject({ text: 'COPY', position: 'bottom-right', size: 10 });
  });

  const refused = (steps: unknown[], step: number | undefined, problem: RegExp) => {
    let err: unknown;
    try {
      validateFlow({ name: 'bad', steps });
    } catch (e) {
      err = e;
    }
    expect(err, JSON.stringify(steps)).toMatchObject({ code: 'INVALID_FLOW', status: 400 });
    const e = err as { message: string; details: { step?: number; problem: string } };
    expect(e.details.step).toBe(step);
    expect(e.details.problem).toMatch(problem);
    if (step !== undefined) expect(e.message).toContain(`steps[${step}]`);
  };

  it('400 naming the step index, its use and the problem', () => {
    refused([{ use: 'rotate', with: { degrees: 90 } }, { use: 'exec', with: { cmd: 'rm -rf /' } }], 1, /unknown step \(known: imageToPdf/);
    refused([{ use: 'rotate', with: { degrees: 45 } }], 0, /degrees/);
    refused([{ use: 'rotate', with: { degrees: 90, extra: 1 } }], 0, /extra/);
    refused([{ use: 'scaleToMedia', with: { media: 'B5' } }], 0, /media/);
    refused([{ use: 'scaleToMedia', with: { media: 'custom' } }], 0, /custom needs width and height/);
    refused([{ use: 'scaleToMedia', with: { media: 'A4', width: 10 } }], 0, /custom only/);
    refused([{ use: 'stampText', with: { text: '' } }], 0, /text/);
    refused([{ use: 'stampText', with: { text: 'a\nb' } }], 0, /line breaks/);
    refused([{ use: 'stampText', with: { text: '漢字' } }], 0, /cannot draw/);
    refused([{ use: 'stampText', with: { text: 'x', position: 'middle' } }], 0, /position/);
    refused([{ use: 'pageRange', with: { pages: '3-1' } }], 0, /ends before it starts/);
    refused([{ use: 'pageRange', with: { pages: '0' } }], 0, /count from 1/);
    refused([{ use: 'pageRange', with: { pages: '1;2' } }], 0, /not a page or a range/);
    refused([{ use: 'pageRange' }], 0, /pages/);
    refused(['rotate'], 0, /a step is/);
    refused([{ use: '__proto__' }], 0, /unknown step/);
    refused([{ use: 'constructor', with: {} }], 0, /unknown step/);
    refused([{ use: 'rotate', with: { degrees: 90 }, run: 'x' }], 0, /run/);
  });

  it('400 for the envelope: no name, too many steps, unknown keys', () => {
    expect(() => validateFlow({ steps: [] })).toThrow(expect.objectContaining({ code: 'INVALID_FLOW' }) as Error);
    expect(() => validateFlow({ name: 'x', steps: Array(51).fill({ use: 'rotate', with: { degrees: 90 } }) })).toThrow(expect.objectContaining({ code: 'INVALID_FLOW' }) as Error);
    expect(() => validateFlow({ name: 'x', steps: [], script: 'x' })).toThrow(expect.objectContaining({ code: 'INVALID_FLOW' }) as Error);
    expect(() => validateFlow({ name: 'x', steps: {} })).toThrow(expect.objectContaining({ code: 'INVALID_FLOW' }) as Error);
  });
});

describe('runFlow', () => {
  it('pageRange, rotate, stampText, scaleToMedia over a real PDF, one stage file per step', async () => {
    const input = await pdfFile('six.pdf', 6);
    const before = await readFile(input);
    const wd = await work();
    const res = await runFlow(flow([
      { use: 'pageRange', with: { pages: '5,1-3' } },
      { use: 'rotate', with: { degrees: 90, pages: '1' } },
      { use: 'stampText', with: { text: 'COPY 42', position: 'top-center', size: 12 } },
      { use: 'scaleToMedia', with: { media: 'A4', orientation: 'portrait' } },
    ]), input, wd, { keepStages: true });
    expect(res.stages.map((s) => path.basename(s.path))).toEqual(['stage-0-pageRange.pdf', 'stage-1-rotate.pdf', 'stage-2-stampText.pdf', 'stage-3-scaleToMedia.pdf']);
    expect((await readdir(wd)).sort()).toEqual(res.stages.map((s) => path.basename(s.path)).sort());
    expect(res.output).toBe(res.stages[3]!.path);
    expect(await readFile(input)).toEqual(before);

    const ranged = await load(res.stages[0]!.path);
    expect(ranged.getPageCount()).toBe(4);
    expect((await textOf(res.stages[0]!.path)).map((t) => t.trim())).toEqual(['page 5', 'page 1', 'page 2', 'page 3']);
    const rotated = await load(res.stages[1]!.path);
    expect(rotated.getPages().map((p) => p.getRotation().angle)).toEqual([90, 0, 0, 0]);
    expect((await textOf(res.stages[2]!.path)).every((t) => t.includes('COPY 42'))).toBe(true);
    const scaled = await load(res.output);
    for (const p of scaled.getPages()) {
      expect(p.getWidth()).toBeCloseTo(595.28, 1);
      expect(p.getHeight()).toBeCloseTo(841.89, 1);
    }
    expect(scaled.getPage(0).getRotation().angle).toBe(90);
    expect((await textOf(res.output))[1]).toContain('page 1');
  });

  it('without keepStages only the last stage stays', async () => {
    const input = await pdfFile('two.pdf', 2);
    const wd = await work();
    const res = await runFlow(flow([{ use: 'rotate', with: { degrees: 180 } }, { use: 'scaleToMedia', with: { media: 'Letter' } }]), input, wd);
    expect(await readdir(wd)).toEqual(['stage-1-scaleToMedia.pdf']);
    expect(res.stages).toHaveLength(1);
    const out = await load(res.output);
    expect(out.getPage(0).getWidth()).toBeCloseTo(612, 1);
    expect(out.getPage(0).getRotation().angle).toBe(180);
  });

  it('landscape pages get landscape paper with orientation auto; custom sizes in mm', async () => {
    const input = await pdfFile('wide.pdf', 1, [800, 400]);
    const res = await runFlow(flow([{ use: 'scaleToMedia', with: { media: 'A5' } }]), input, await work());
    const p = (await load(res.output)).getPage(0);
    expect(p.getWidth()).toBeCloseTo(595.28, 1);
    expect(p.getHeight()).toBeCloseTo(419.53, 1);
    const custom = await runFlow(flow([{ use: 'scaleToMedia', with: { media: 'custom', width: 100, height: 50, orientation: 'landscape' } }]), input, await work());
    const c = (await load(custom.output)).getPage(0);
    expect(c.getWidth()).toBeCloseTo((100 * 72) / 25.4, 1);
    expect(c.getHeight()).toBeCloseTo((50 * 72) / 25.4, 1);
  });

  it('imageToPdf: PNG, JPEG and WebP (converted with sharp) become one-page PDFs', async () => {
    const raw = { create: { width: 300, height: 150, channels: 3 as const, background: { r: 200, g: 10, b: 10 } } };
    const files = {
      png: await sharp(raw).png().withMetadata({ density: 150 }).toBuffer(),
      jpg: await sharp(raw).jpeg().toBuffer(),
      webp: await sharp(raw).webp().toBuffer(),
    };
    for (const [ext, bytes] of Object.entries(files)) {
      const input = path.join(dir, `img.${ext}`);
      await writeFile(input, bytes);
      const res = await runFlow(flow([{ use: 'imageToPdf', with: { dpi: 72 } }, { use: 'stampText', with: { text: ext } }]), input, await work());
      const doc = await load(res.output);
      expect(doc.getPageCount(), ext).toBe(1);
      expect(doc.getPage(0).getWidth(), ext).toBeCloseTo(300, 0);
      expect(doc.getPage(0).getHeight(), ext).toBeCloseTo(150, 0);
    }
    const fitted = path.join(dir, 'fit.png');
    await writeFile(fitted, files.png);
    const res = await runFlow(flow([{ use: 'imageToPdf', with: { media: { media: 'A4' } } }]), fitted, await work());
    expect((await load(res.output)).getPage(0).getWidth()).toBeCloseTo(841.89, 1);
  });

  it('imageToPdf passes a PDF through; an empty flow prints the input itself', async () => {
    const input = await pdfFile('pass.pdf', 3);
    const res = await runFlow(flow([{ use: 'imageToPdf' }]), input, await work());
    expect((await load(res.output)).getPageCount()).toBe(3);
    expect(await runFlow([], input, await work())).toEqual({ output: input, stages: [] });
  });

  it('a document a step cannot handle is 422 FLOW_FAILED naming the step', async () => {
    const text = path.join(dir, 'note.txt');
    await writeFile(text, 'plain text, not a PDF');
    await expect(runFlow(flow([{ use: 'rotate', with: { degrees: 90 } }]), text, await work())).rejects.toMatchObject({ code: 'FLOW_FAILED', status: 422, details: { step: 0, use: 'rotate' } });
    await expect(runFlow(flow([{ use: 'imageToPdf' }]), text, await work())).rejects.toMatchObject({ code: 'FLOW_FAILED', details: { step: 0, use: 'imageToPdf' } });
    const broken = path.join(dir, 'broken.pdf');
    await writeFile(broken, '%PDF-1.7\n garbage without objects');
    await expect(runFlow(flow([{ use: 'rotate', with: { degrees: 90 } }]), broken, await work())).rejects.toMatchObject({ code: 'FLOW_FAILED' });
    const encrypted = path.resolve('test/fixtures/encrypted.pdf');
    await expect(runFlow(flow([{ use: 'stampText', with: { text: 'x' } }]), encrypted, await work())).rejects.toMatchObject({ code: 'FLOW_FAILED', details: { problem: expect.stringMatching(/encrypted/) as string } });
    const two = await pdfFile('short.pdf', 2);
    await expect(runFlow(flow([{ use: 'pageRange', with: { pages: '5-' } }]), two, await work())).rejects.toMatchObject({ code: 'FLOW_FAILED', details: { problem: expect.stringMatching(/selects none/) as string } });
    // a stored flow is checked again before it runs
    await expect(runFlow([{ use: 'shell', with: {} }], two, await work())).rejects.toMatchObject({ code: 'INVALID_FLOW' });
  });

  it('stops between steps when the signal aborts', async () => {
    const input = await pdfFile('abort.pdf', 1);
    const ctl = new AbortController();
    ctl.abort(new Error('stop'));
    await expect(runFlow(flow([{ use: 'rotate', with: { degrees: 90 } }]), input, await work(), { signal: ctl.signal })).rejects.toThrow('stop');
  });
});
