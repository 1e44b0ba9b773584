import { AppError } from '../errors/app-error.js';

/** 400 for a CSV body; `details` names the row (the header is row 1) and the column's header key. */
export const invalidCsv = (message: string, details: { row: number; column?: string; line?: number }) =>
  new AppError('INVALID_CSV', message, details);

/** 400 for an RList body; `details` names the section and the key, and the line. */
export const invalidRlist = (message: string, details: { section: string | null; key?: string; line: number }) =>
  new AppError('INVALID_RLIST', message, details);

/** 413: more items than `maxItems`. */
export const listTooLarge = (maxItems: number) =>
  new AppError('LIST_TOO_LARGE', `the list has more than ${maxItems} items`, { maxItems });
