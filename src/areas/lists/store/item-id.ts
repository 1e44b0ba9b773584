import { randomFillSync } from 'node:crypto';

/**
 * Ids for list items: UUID version 7 (RFC 9562), a millisecond timestamp
 * followed by random bits. Still unguessable and never reused, but items
 * inserted together get neighbouring ids, so a large import appends to the
 * primary-key index instead of writing all over it (random v4 ids made the
 * index the slowest part of a million-row import).
 *
 * Monotonic within the process (RFC 9562, section 6.2, method 1): the 12
 * bits after the version are a counter, started at a random value below
 * 2,048 each millisecond and incremented for each id of that millisecond
 * (past 4,095 the timestamp moves on by one); the last 62 bits are random.
 * Each id is then greater than the one before, so an import's rows always
 * go to the right edge of the primary key: its B-tree takes the
 * rightmost-page fast path and splits its last page 90/10, where ids random
 * within a millisecond (about 200 rows of an import) split pages 50/50 and
 * left the index a third larger.
 */
const pool = Buffer.alloc(10 * 1024);
let at = pool.length;
let lastMs = -1;
let counter = 0;
// the timestamp's 6 bytes, big-endian, for `lastMs`
const msBytes = Buffer.alloc(6);

function random(): number {
  if (at + 10 > pool.length) {
    randomFillSync(pool);
    at = 0;
  }
  const offset = at;
  at += 10;
  return offset;
}

/**
 * The next id as 16 bytes written at `offset` (COPY's binary format takes a
 * uuid so). Returns the offset after it.
 */
export function writeItemId(target: Buffer, offset: number): number {
  const r = random();
  const now = Date.now();
  if (now > lastMs || ++counter > 0xfff) {
    // a new millisecond, or the counter ran out in this one (then the timestamp runs one ahead)
    lastMs = now > lastMs ? now : lastMs + 1;
    counter = ((pool[r]! << 8) | pool[r + 1]!) & 0x7ff;
    msBytes.writeUIntBE(lastMs, 0, 6);
  }
  // byte by byte: Buffer#copy crosses into C++ for a few bytes, a visible share of a million-row import
  for (let k = 0; k < 6; k++) target[offset + k] = msBytes[k]!;
  target[offset + 6] = 0x70 | (counter >> 8);
  target[offset + 7] = counter & 0xff;
  target[offset + 8] = 0x80 | (pool[r + 2]! & 0x3f);
  for (let k = 3; k < 10; k++) target[offset + 6 + k] = pool[r + k]!;
  return offset + 16;
}

const scratch = Buffer.alloc(16);

/** The next id as text (8-4-4-4-12 lower-case hex digits). */
export function itemId(): string {
  writeItemId(scratch, 0);
  const h = scratch.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
