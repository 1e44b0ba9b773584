import { z } from 'zod';
import { printerName } from '../printers/schema.js';

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
