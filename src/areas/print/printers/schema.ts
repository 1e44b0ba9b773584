import { z } from 'zod';
import { textProblem } from '../../../errors/input-errors.js';

/** Printer names: 1-200 characters of the shared text rule (errors/input-errors.ts: no control character, C1 included, no unpaired surrogate). */
export const printerName = z.string().min(1).max(200)
  .superRefine((n, ctx) => {
    const problem = textProblem(n);
    if (problem) ctx.addIssue({ code: 'custom', message: `a printer name ${problem}` });
  })
  // URLs resolve '.' and '..' segments (also as %2E), so such a name could never be addressed in a path
  .refine((n) => n !== '.' && n !== '..', 'a printer name is not "." or ".."')
  // GET /v3/printers/metadata is the field list (spec); routes match without case, so no spelling of it can name a printer
  .refine((n) => n.toLowerCase() !== 'metadata', 'a printer name is not "metadata" (in any case): /v3/printers/metadata is the printers\' field list');

const text = (max: number) => z.string().max(max).nullable().optional();

/** POST /v3/printers/ and PUT /v3/printers/{name}: the printer's configuration. */
export const printerSchema = z.strictObject({
  name: printerName,
  connection: z.string().min(1).max(2000),
  description: text(2000),
  location: text(500),
  enabled: z.boolean().default(true),
  flow: z.string().min(1).max(200).nullable().optional(),
});

/** PUT replaces: the name comes from the path (a body name must agree). */
export const replaceSchema = printerSchema.extend({ name: printerName.optional() });

export const messageSchema = z.strictObject({ text: z.string().min(1).max(2000) });
export const redirectSchema = z.strictObject({ target: printerName.nullable() });
