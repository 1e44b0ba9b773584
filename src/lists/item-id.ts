import { randomFillSync } from 'node:crypto';

/**
 * Ids for list items: UUID version 7 (RFC 9562), a millisecond timestamp
 * followed by random bits. Still unguessable and never reused, but items
 * inserted together get neighbouring ids, so a large import appends to the
 * primary-key index instead of writing all over it (random v4 ids made the
 * index the slowest part of a million-row import).
 */
const pool = Buffer.alloc(10 * 1024);
let at = pool.length;

export function itemId(): string {
  if (at + 10 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const r = pool.toString('hex', at, at + 10);
  at += 10;
  const t = Date.now().toString(16).padStart(12, '0');
  const variant = ((parseInt(r[3]!, 16) & 0x3) | 0x8).toString(16);
  return `${t.slice(0, 8)}-${t.slice(8, 12)}-7${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}
