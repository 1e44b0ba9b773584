import { describe, expect, it } from 'vitest';
import { CopyRows } from '../../../../../src/areas/lists/store/bulk/copy-rows.js';
import type { Metadata } from '../../../../../src/formats/index.js';

/** The rows of a binary COPY payload, each field's bytes (null for SQL NULL). */
function decode(payload: Buffer): (Buffer | null)[][] {
  expect(payload.subarray(0, 11).toString('latin1')).toBe('PGCOPY\n\xff\r\n\0');
  let o = 19;
  const rows: (Buffer | null)[][] = [];
  for (;;) {
    const fields = payload.readInt16BE(o);
    o += 2;
    if (fields === -1) break;
    const row: (Buffer | null)[] = [];
    for (let f = 0; f < fields; f++) {
      const n = payload.readInt32BE(o);
      o += 4;
      if (n < 0) {
        row.push(null);
      } else {
        row.push(payload.subarray(o, o + n));
        o += n;
      }
    }
    rows.push(row);
  }
  expect(o).toBe(payload.length);
  return rows;
}

const proto: Metadata = {};
Object.defineProperty(proto, '__proto__', { value: 'p', enumerable: true, writable: true, configurable: true });

const METADATA: Metadata[] = [
  {},
  { name: 'Document 1, page 1', copies: '3' },
  { quote: 'say "hi"', backslash: 'a\\b', control: 'tab\there\nnew\u0001', del: '\u007f' },
  { 'k"ey\\': 'v', 'ké': 'välue', '日本': '語', emoji: '😀 ok', lone: 'x\ud800y', lowLone: '\udc00' },
  { a: { b: { c: 'deep' }, d: '' }, e: {} },
  { n: 1, f: 1.5, t: true, nul: null, arr: ['x', { y: 'z' }, 2], date: new Date(0), gone: undefined },
  { 10: 'ten', 2: 'two', b: 'b', a: 'a' },
  proto,
  { long: 'x'.repeat(200_000) },
];

describe('CopyRows', () => {
  it('writes metadata as the bytes of JSON.stringify and text as UTF-8, whatever the characters', () => {
    const rows = new CopyRows('0b1c2d3e-0000-4000-8000-00000000000a');
    const hrefs = ['/v1/services/store/repo/0b1c2d3e-0000-4000-8000-000000000001', 'https://ex.ample/störe?q=日本', 'x\ud800', 'a'.repeat(70_000)];
    const cases = METADATA.map((metadata, i) => ({ metadata, href: hrefs[i % hrefs.length]! }));
    cases.forEach((c, i) => rows.add(i, c.href, i % 2 === 0 ? { sid: 'störe', uuid: '0b1c2d3e-0000-4000-8000-00000000000B' } : null, c.metadata));
    expect(rows.rows).toBe(cases.length);
    const decoded = decode(rows.take());
    expect(decoded).toHaveLength(cases.length);
    decoded.forEach((row, i) => {
      const c = cases[i]!;
      expect(row).toHaveLength(7);
      expect(row[2]!.readInt32BE(0)).toBe(i);
      expect(row[3]!.equals(Buffer.from(c.href, 'utf8'))).toBe(true);
      if (i % 2 === 0) {
        expect(row[4]!.toString('utf8')).toBe('störe');
        expect(row[5]!.toString('hex')).toBe('0b1c2d3e00004000800000000000000b');
      } else {
        expect(row[4]).toBeNull();
        expect(row[5]).toBeNull();
      }
      const jsonb = row[6]!;
      expect(jsonb[0]).toBe(1);
      expect(jsonb.subarray(1).toString('utf8')).toBe(JSON.stringify(c.metadata));
      expect(jsonb.subarray(1).equals(Buffer.from(JSON.stringify(c.metadata), 'utf8'))).toBe(true);
    });
  });

  it('starts each payload afresh and reuses the buffer given back', () => {
    const rows = new CopyRows('0b1c2d3e-0000-4000-8000-00000000000a');
    rows.add(0, 'h0', null, { a: 'b' });
    const first = decode(rows.take());
    rows.sent();
    rows.add(1, 'h1', null, { c: 'd' });
    rows.add(2, 'h2', null, {});
    const second = decode(rows.take());
    expect(first.map((r) => r[3]!.toString())).toEqual(['h0']);
    expect(second.map((r) => r[6]!.subarray(1).toString())).toEqual(['{"c":"d"}', '{}']);
  });
});
