import type { Context } from 'koa';
import { AppError } from '../errors/app-error.js';

/**
 * The `embed` query parameter (comma-separated or repeated) as a set of the
 * values the operation offers; any other value is 400 `INVALID_EMBED`.
 */
export function embedParam<E extends string>(ctx: Context, allowed: readonly E[]): Set<E> {
  const raw = ctx.query.embed;
  const values = (Array.isArray(raw) ? raw : raw ? [raw] : []).flatMap((v) => v.split(',')).map((v) => v.trim()).filter(Boolean);
  for (const v of values) {
    if (!allowed.includes(v as E)) throw new AppError('INVALID_EMBED', `embed "${v}" is not offered here (allowed: ${allowed.join(', ')})`);
  }
  return new Set(values as E[]);
}
