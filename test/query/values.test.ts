import { describe, expect, it } from 'vitest';
import { parseBoolean, parseDate, parseNumber } from '../../src/query/values.js';

/** What a plain query value may be read as; anything accepted here is bound to PostgreSQL as that type. */
describe('reading typed values strictly', () => {
  it('numbers: decimal notation only', () => {
    expect(['0', '-1', '10.5', '1e3', '2.5E-2'].map(parseNumber)).toEqual([0, -1, 10.5, 1000, 0.025]);
    for (const s of ['', ' 1', '01', '0x10', '1_000', 'Infinity', 'NaN', '1.', '.5', '1e9999', '+1']) expect(parseNumber(s), s).toBeUndefined();
  });

  it('booleans: true and false', () => {
    expect([parseBoolean('true'), parseBoolean('false'), parseBoolean('TRUE'), parseBoolean('1')]).toEqual([true, false, undefined, undefined]);
  });

  it('dates: ISO 8601 calendar dates and date-times only', () => {
    for (const s of ['2024-02-29', '2024-05-01T10:00', '2024-05-01T10:00:00Z', '2024-05-01 10:00:00.123456+02:00', '0099-01-01', '2024-05-01T23:59:59-0830']) {
      expect(parseDate(s), s).toBe(s);
    }
    for (const s of ['2023-02-29', '2024-02-30', '2024-13-01', '2024-00-10', '0000-01-01', '2024-05-01T24:00', '2024-05-01T10:60', '2024-05-01T10:00:00+16:00',
      'now', 'today', 'epoch', 'infinity', '2024-5-1', '20240501', '2024-05-01T10:00:00.1234567Z', '2024-05-01Z']) {
      expect(parseDate(s), s).toBeUndefined();
    }
  });
});
