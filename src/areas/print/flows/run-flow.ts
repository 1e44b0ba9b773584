import { open, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { EncryptedPDFError, PDFDocument } from 'pdf-lib';
import sharp from 'sharp';
import { AppError } from '../../../errors/app-error.js';
import { FLOW_STEPS, FlowStepError } from './steps.js';
import { validateSteps, type FlowStep } from './validate-flow.js';

/** One intermediate file a flow step wrote. */
export interface Stage {
  step: number;
  use: string;
  path: string;
  size: number;
}

export interface FlowResult {
  /** The file to print: the last stage, or the input when the flow has no steps. */
  output: string;
  /** Stage files still on disk (all of them with `keepStages`, else only the last). */
  stages: Stage[];
}

export interface RunFlowOptions {
  /** Keep every intermediate stage (the job's `tempfiles`); otherwise each is removed once the next exists. */
  keepStages?: boolean;
  signal?: AbortSignal;
}

/** Largest input a flow loads (pdf-lib holds a document in memory). */
export const MAX_FLOW_INPUT_BYTES = 512 * 1024 * 1024;

const failed = (index: number, use: string, problem: string) =>
  new AppError('FLOW_FAILED', `flow step ${index} (${use}) failed: ${problem}`, { step: index, use, problem });

async function startsWithPdf(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { buffer, bytesRead } = await fh.read(Buffer.alloc(1024), 0, 1024, 0);
    // the header may follow a few bytes of junk (PDF 1.7, 7.5.2 tolerates it); look in the first KiB
    return buffer.subarray(0, bytesRead).includes('%PDF-');
  } finally {
    await fh.close();
  }
}

/** PNG and JPEG go into the PDF as they are; anything sharp reads (WebP, TIFF, GIF, AVIF) becomes PNG first. */
async function readImage(bytes: Buffer) {
  const meta = await sharp(bytes, { failOn: 'error' }).metadata();
  if (!meta.width || !meta.height) throw new Error('not an image');
  const density = meta.density ?? 0;
  if (meta.format === 'png' || meta.format === 'jpeg') return { bytes, format: meta.format, width: meta.width, height: meta.height, density };
  const png = await sharp(bytes, { failOn: 'error' }).png().toBuffer();
  return { bytes: png, format: 'png' as const, width: meta.width, height: meta.height, density };
}

/**
 * Runs a flow over a job's document (the preprocessing stage). Each step
 * writes a new stage file `stage-<n>-<use>.pdf` into `workDir`; the input is
 * never changed. Failures are 422 `FLOW_FAILED` naming the step and the
 * problem (a document the step cannot handle: encrypted, not a PDF, an
 * image where a PDF is needed); the steps are checked against the catalogue
 * again first, since a stored flow may predate a catalogue change.
 */
export async function runFlow(steps: readonly unknown[], inputPath: string, workDir: string, opts: RunFlowOptions = {}): Promise<FlowResult> {
  const checked: FlowStep[] = validateSteps(steps);
  let current = inputPath;
  let isPdf = await startsWithPdf(inputPath);
  let doc: PDFDocument | undefined;
  const stages: Stage[] = [];
  for (const [index, step] of checked.entries()) {
    opts.signal?.throwIfAborted();
    const def = FLOW_STEPS[step.use];
    try {
      if (def.input === 'image') {
        if (!isPdf) {
          const bytes = await readFile(current);
          const image = await readImage(bytes).catch((err: unknown) => {
            throw new FlowStepError(`the document is neither a PDF nor an image sharp can read (${(err as Error).message})`);
          });
          doc = await def.apply(image, step.with as never);
        }
      } else {
        if (!isPdf) throw new FlowStepError('needs a PDF; put imageToPdf first for images');
        doc ??= await loadPdf(current);
        doc = await def.apply(doc, step.with as never);
      }
    } catch (err) {
      if (err instanceof FlowStepError) throw failed(index, step.use, err.message);
      if (err instanceof EncryptedPDFError) throw failed(index, step.use, 'the PDF is encrypted');
      if (err instanceof AppError) throw err;
      throw failed(index, step.use, (err as Error).message.slice(0, 300));
    }
    const file = path.join(workDir, `stage-${index}-${step.use}.pdf`);
    const bytes = doc ? await doc.save() : await readFile(current);
    await writeFile(file, bytes, { mode: 0o600 });
    if (!opts.keepStages && stages.length > 0) await rm(stages.pop()!.path, { force: true });
    stages.push({ step: index, use: step.use, path: file, size: bytes.byteLength });
    current = file;
    isPdf = true;
  }
  return { output: current, stages };
}

async function loadPdf(file: string): Promise<PDFDocument> {
  const fh = await open(file, 'r');
  const size = (await fh.stat()).size;
  await fh.close();
  if (size > MAX_FLOW_INPUT_BYTES) throw new FlowStepError(`the document is larger than ${MAX_FLOW_INPUT_BYTES} bytes`);
  const bytes = await readFile(file);
  try {
    return await PDFDocument.load(bytes, { updateMetadata: false });
  } catch (err) {
    if (err instanceof EncryptedPDFError) throw err;
    throw new FlowStepError(`the PDF does not parse (${(err as Error).message.slice(0, 200)})`);
  }
}
