import { z } from 'zod';
import { metadataProblem } from '../repository/metadata-rules.js';

/**
 * The body of `PUT /config`: a ConfigItem, any JSON object, stored as sent
 * (only what the database can store: no lone surrogates, bounded depth and
 * size, as metadata; `__proto__` keys never get past the JSON reader).
 */
export const configItemSchema = z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});
