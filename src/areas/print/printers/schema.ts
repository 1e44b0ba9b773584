import { z } from 'zod';

/** Printer names: any Unicode except control characters, 1-200 characters. */
export const printerName = z.string().min(1).max(200)
  // eslint-disable-next-line no-control-regex -- control characters are what a name must not hold
  .refine((n) => !/[\u0000-\u001f\u007f]/.test(n), 'a printer name holds no control characters')
  // URLs resolve '.' and '..' segments (also as %2E), so such a name could never be addressed in a path
  .refine((n) => n !== '.' && n !== '..', 'a printer name is not "." or ".."');

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
