import { describe, expect, it } from 'vitest';
import { itemId, writeItemId } from '../../../../src/areas/lists/store/item-id.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const hex = (b: Buffer) => b.toString('hex');

describe('item ids', () => {
  it('are UUIDv7, each greater than the one before, in bytes and as text alike', () => {
    const buf = Buffer.alloc(16 * 50_000);
    let o = 0;
    const texts: string[] = [];
    const start = Date.now();
    // a burst far beyond 4,096 ids a millisecond, the text and byte forms interleaved
    for (let i = 0; i < 50_000; i++) {
      o = writeItemId(buf, o);
      if (i % 1000 === 0) texts.push(itemId());
    }
    let previous = '';
    for (let i = 0; i < 50_000; i++) {
      const id = buf.subarray(i * 16, i * 16 + 16);
      expect(id[6]! >> 4).toBe(7);
      expect(id[8]! >> 6).toBe(2);
      const h = hex(id);
      expect(h > previous).toBe(true);
      previous = h;
    }
    for (const t of texts) expect(t).toMatch(UUID_V7);
    const sorted = [...texts].sort();
    expect(texts).toEqual(sorted);
    expect(new Set(texts).size).toBe(texts.length);
    // the timestamp is the millisecond the id was made in (it may run a little ahead only past 4,096 ids a millisecond)
    const first = buf.readUIntBE(0, 6);
    expect(first).toBeGreaterThanOrEqual(start);
    expect(first).toBeLessThan(start + 1000);
    const next = itemId();
    expect(next.replace(/-/g, '') > previous).toBe(true);
  });

  it('keep 62 random bits: two bursts give different ids', () => {
    const a = Buffer.alloc(16 * 100);
    const b = Buffer.alloc(16 * 100);
    for (let i = 0, o = 0; i < 100; i++) o = writeItemId(a, o);
    for (let i = 0, o = 0; i < 100; i++) o = writeItemId(b, o);
    const tails = new Set<string>();
    for (const buf of [a, b]) for (let i = 0; i < 100; i++) tails.add(hex(buf.subarray(i * 16 + 8, i * 16 + 16)));
    expect(tails.size).toBe(200);
  });
});
