import path from 'node:path';
import { z } from 'zod';
import { TASK_ACTIONS } from '../facets/tasks.js';

/** A printer the service ensures at start: created when missing, never changed when it exists (an operator's changes stay). */
const printerSchema = z.strictObject({
  name: z.string().min(1).max(200),
  /**
   * A print API connection (`ipp://`, `socket://`, `lpr://`, `file:///dir`);
   * `file:<relative path>` is a directory under the data directory, created
   * at start.
   */
  connection: z.string().min(1).max(2000),
  description: z.string().max(1000).optional(),
  location: z.string().max(1000).optional(),
});

export const optionsSchema = z.strictObject({
  /** The printer of items whose merged metadata names none (`printer`). Absent: such an item fails, naming the key. */
  defaultPrinter: z.string().min(1).max(200).optional(),
  /** Printers created at start when missing (the demo's directory printer). */
  printers: z.array(printerSchema).max(100).default([]),
  /** The task actions offered (default all: start, pause, resume, abort). */
  actions: z.array(z.enum(TASK_ACTIONS)).min(1).refine((a) => a.includes('start'), 'must include "start"').default([...TASK_ACTIONS]),
}).refine((o) => new Set(o.printers.map((p) => p.name)).size === o.printers.length, { message: 'printers: a name is listed twice', path: ['printers'] });

export type PrintOptions = z.infer<typeof optionsSchema>;
export type PrinterOption = PrintOptions['printers'][number];

/**
 * A printer's connection with a relative `file:` path resolved under the
 * data directory (`file:printed` -> `file:///<dataDir>/printed`), and that
 * directory, to be created at start; any other connection as it is.
 */
export function resolveConnection(connection: string, dataDir: string): { connection: string; directory?: string } {
  const m = /^file:(?!\/)(.+)$/.exec(connection);
  if (!m) return { connection };
  const directory = path.resolve(dataDir, decodeURIComponent(m[1]!));
  return { connection: new URL(`file://${directory}`).href, directory };
}
