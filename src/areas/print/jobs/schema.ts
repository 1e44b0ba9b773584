import { z } from 'zod';

/** Printer names: any Unicode except control characters, 1-200 characters. */
export const printerName = z.string().min(1).max(200)
  // eslint-disable-next-line no-control-regex -- control characters are what a name must not hold
  .refine((n) => !/[\u0000-\u001f\u007f]/.test(n), 'a printer name holds no control characters')
  // URLs resolve '.' and '..' segments (also as %2E), so such a name could never be addressed in a path
  .refine((n) => n !== '.' && n !== '..', 'a printer name is not "." or ".."');

export const moveSchema = z.strictObject({ printer: printerName });
export const tempfilesSchema = z.strictObject({ keep: z.boolean() });

const int = (min: number, max: number) => z.string().regex(/^\d{1,9}$/, 'a whole number').transform(Number).pipe(z.number().int().min(min).max(max));

/** `POST /v3/jobs/` (extension): the document is the raw body; these are its query parameters. */
export const submitQuerySchema = z.strictObject({
  printer: printerName,
  name: z.string().min(1).max(500).optional(),
  fileName: z.string().min(1).max(500).optional(),
  copies: int(1, 9999).optional(),
  priority: int(0, 100).optional(),
  /** A flow name, or empty for none (overrides the printer's flow). */
  flow: z.string().max(200).optional(),
  /** Seconds the job is kept once finished (overrides the default for its final state). */
  retention: int(0, 315_360_000).optional(),
});
