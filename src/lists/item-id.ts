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
const VARIANT = '89ab';
// the timestamp part changes once a millisecond; a large import makes thousands of ids in one
let lastMs = -1;
let timePart = '';

export function itemId(): string {
  if (at + 10 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const r = pool.toString('hex', at, at + 10);
  at += 10;
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    const t = now.toString(16).padStart(12, '0');
    timePart = `${t.slice(0, 8)}-${t.slice(8, 12)}-7`;
  }
  const variant = VARIANT[parseInt(r[3]!, 16) & 0x3]!;
  return `${timePart}${r.slice(0, 3)}-${variant}${r.slice(4, 7)}-${r.slice(7, 19)}`;
}

/**
 * The same id as 16 bytes written at `offset` (COPY's binary format takes a
 * uuid so): the big-endian millisecond timestamp, version 7, the variant,
 * and random bits from the same pool. Returns the offset after it.
 */
export function writeItemId(target: Buffer, offset: number): number {
  if (at + 10 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  target.writeUIntBE(Date.now(), offset, 6);
  target[offset + 6] = 0x70 | (pool[at]! & 0x0f);
  target[offset + 7] = pool[at + 1]!;
  target[offset + 8] = 0x80 | (pool[at + 2]! & 0x3f);
  pool.copy(target, offset + 9, at + 3, at + 10);
  at += 10;
  return offset + 16;
}
