import { AppError } from './app-error.js';

/**
 * PostgreSQL `text` and `jsonb` cannot hold U+0000: such input would fail deep
 * in SQL as a 500. Every entry point for user text (JSON bodies, query
 * strings, query trees) refuses it up front with this one error.
 */
export const hasNul = (s: string): boolean => s.includes('\u0000');

export const nulRefused = (where: string) =>
  new AppError('INVALID_CHARACTER', `${where} contains a NUL character (\\u0000), which cannot be stored`, { where });
