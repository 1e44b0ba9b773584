import type { z } from 'zod';
import { AppError } from '../errors/app-error.js';

/** Parses with a zod schema; 400 VALIDATION_FAILED listing every issue by path. */
export function validate<S extends z.ZodType>(schema: S, value: unknown, where = 'body'): z.infer<S> {
  const res = schema.safeParse(value);
  if (res.success) return res.data;
  throw new AppError('VALIDATION_FAILED', `the ${where} is invalid: ${res.error.issues[0]?.message ?? ''}`, {
    issues: res.error.issues.map((i) => ({ path: [where, ...i.path.map(String)].join('.'), message: i.message })),
  });
}
