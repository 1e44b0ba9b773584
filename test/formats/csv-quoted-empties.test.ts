import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { type Metadata, collectList, parseList } from '../../src/formats/index.js';
import { format } from './helpers.js';

/**
 * A quoted empty field (`""`) is the empty string, an unquoted one no value.
 * csv-parse's records do not tell them apart: csv.ts finds the quoted ones in
 * the record's bytes, located by byte offsets into the input and kept across
 * the input's chunks. These tests feed the same bytes in every kind of
 * chunking and expect the same items.
 */

type Item = { href: string; metadata: Metadata };

async function parseChunks(chunks: Buffer[]): Promise<Item[]> {
  const list = await collectList(parseList(format('csv'), Readable.from(chunks)));
  return list.items.map(({ href, metadata }) => ({ href, metadata }));
}

/** xorshift32, so a failure can be replayed */
function random(seed: number) {
  let s = seed >>> 0 || 1;
  return (n: number) => {
    s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
    return s % n;
  };
}

/** The bytes cut into pieces of 1 to `max` bytes. */
function randomChunks(bytes: Buffer, seed: number, max: number): Buffer[] {
  const next = random(seed);
  const parts: Buffer[] = [];
  for (let i = 0; i < bytes.length;) {
    const n = 1 + next(max);
    parts.push(bytes.subarray(i, i + n));
    i += n;
  }
  return parts;
}

/** Parses `text` whole, a byte at a time, split in two at every byte position, and in random small chunks; every reading must give `expected`. */
async function expectEveryChunking(text: string | Buffer, expected: Item[]) {
  const bytes = Buffer.isBuffer(text) ? text : Buffer.from(text, 'utf8');
  expect(await parseChunks([bytes])).toEqual(expected);
  expect(await parseChunks([...bytes].map((b) => Buffer.from([b])))).toEqual(expected);
  for (let k = 1; k < bytes.length; k++) {
    const items = await parseChunks([bytes.subarray(0, k), bytes.subarray(k)]);
    if (JSON.stringify(items) !== JSON.stringify(expected)) expect({ splitAt: k, items }).toEqual({ splitAt: k, items: expected });
  }
  for (let seed = 1; seed <= 20; seed++) {
    const items = await parseChunks(randomChunks(bytes, seed, 1 + (seed % 7)));
    if (JSON.stringify(items) !== JSON.stringify(expected)) expect({ seed, items }).toEqual({ seed, items: expected });
  }
}

const HEAD = 'item.metadata.a,item.metadata.b,item.href,item.metadata.c\n';

describe('CSV: quoted empty fields, whatever the chunking', () => {
  it('in the first, middle and last column', async () => {
    await expectEveryChunking(`${HEAD}"",x,/1,y\n1,"",/2,\n,,/3,""\n"","",/4,""\n`, [
      { href: '/1', metadata: { a: '', b: 'x', c: 'y' } },
      { href: '/2', metadata: { a: '1', b: '' } },
      { href: '/3', metadata: { c: '' } },
      { href: '/4', metadata: { a: '', b: '', c: '' } },
    ]);
  });

  it('"" and an unquoted empty field at the same position in adjacent records', async () => {
    await expectEveryChunking(`${HEAD}"",,/1,""\n,"",/2,\n"",,/3,""\n,,/4,\n`, [
      { href: '/1', metadata: { a: '', c: '' } },
      { href: '/2', metadata: { b: '' } },
      { href: '/3', metadata: { a: '', c: '' } },
      { href: '/4', metadata: {} },
    ]);
  });

  it('in a record after blank lines (LF, CRLF), and in the first record after the header', async () => {
    await expectEveryChunking(`${HEAD}\n\r\n"",,/1,\n\n\n\r\n\r\n,,/2,""\r\n\n`, [
      { href: '/1', metadata: { a: '' } },
      { href: '/2', metadata: { c: '' } },
    ]);
    await expectEveryChunking('item.metadata.a,item.href\n\r\n\n"",/x\n,/y', [
      { href: '/x', metadata: { a: '' } },
      { href: '/y', metadata: {} },
    ]);
  });

  it('in the last record, without a trailing newline', async () => {
    await expectEveryChunking(`${HEAD},,/1,\n,,/2,""`, [
      { href: '/1', metadata: {} },
      { href: '/2', metadata: { c: '' } },
    ]);
    await expectEveryChunking(`${HEAD}"",,/1,""\n,"",/2,`, [
      { href: '/1', metadata: { a: '', c: '' } },
      { href: '/2', metadata: { b: '' } },
    ]);
    await expectEveryChunking(`${HEAD}"",,/1,""\r\n,,/2,""\r\n\r\n`, [
      { href: '/1', metadata: { a: '', c: '' } },
      { href: '/2', metadata: { c: '' } },
    ]);
  });

  it('with a BOM and CRLF', async () => {
    await expectEveryChunking(`\ufeff${HEAD.replace('\n', '\r\n')}"",,/1,\r\n,"",/2,""\r\n`, [
      { href: '/1', metadata: { a: '' } },
      { href: '/2', metadata: { b: '', c: '' } },
    ]);
    // a BOM and the first data record's quoted empty in the first column, one column only besides the href
    await expectEveryChunking('\ufeffitem.metadata.a,item.href\r\n"",/x\r\n', [{ href: '/x', metadata: { a: '' } }]);
  });

  it('after multi-byte UTF-8 text in earlier records and in the same record', async () => {
    await expectEveryChunking(`${HEAD}ü 中 🎉,"é, 🎉",/ü,ß\n"🎉",,/2,""\n"中, ""ü""",😀,/3,""\n"","é",/4,\n`, [
      { href: '/ü', metadata: { a: 'ü 中 🎉', b: 'é, 🎉', c: 'ß' } },
      { href: '/2', metadata: { a: '🎉', c: '' } },
      { href: '/3', metadata: { a: '中, "ü"', b: '😀', c: '' } },
      { href: '/4', metadata: { a: '', b: 'é' } },
    ]);
  });

  it('next to quoted fields with doubled quotes, commas and newlines', async () => {
    await expectEveryChunking(`${HEAD}"a "",b"" c","",/1,""""\n"","x\n"""",""",/2,""\n"",",",/3,""\n`, [
      { href: '/1', metadata: { a: 'a ",b" c', b: '', c: '"' } },
      { href: '/2', metadata: { a: '', b: 'x\n"","', c: '' } },
      { href: '/3', metadata: { a: '', b: ',', c: '' } },
    ]);
  });

  it('after a lone CR at the start of the first field (data, not a line end)', async () => {
    await expectEveryChunking(`${HEAD}\rx,"",/1,\n\r,,/2,""\n`, [
      { href: '/1', metadata: { a: '\rx', b: '' } },
      { href: '/2', metadata: { a: '\r', c: '' } },
    ]);
  });
});

describe('CSV: quoted empty fields in random lists', () => {
  // each value: undefined is written as an unquoted empty field, '' as "", others quoted when needed or at random
  const ALPHABET = ['a', 'b', 'ü', '中', '🎉', ' ', '"', ',', '\n', '\r\n', '\r', 'x'];
  const SAFE = ['a', 'b', 'ü', '中', '🎉', ' ', 'x'];

  function randomList(seed: number) {
    const next = random(seed);
    const pick = <T>(xs: readonly T[]) => xs[next(xs.length)]!;
    const value = (): string | undefined => {
      const k = next(10);
      if (k < 3) return undefined;
      if (k < 6) return '';
      let v = '';
      for (let n = 1 + next(6); n > 0; n--) v += pick(ALPHABET);
      return v;
    };
    const cell = (v: string | undefined) => {
      if (v === undefined) return '';
      if (v === '') return '""';
      const plain = [...v].every((c) => SAFE.includes(c)) && next(2) === 0;
      return plain ? v : `"${v.replaceAll('"', '""')}"`;
    };
    const eol = () => pick(['\n', '\r\n']);
    let text = (next(2) ? '\ufeff' : '') + HEAD.trimEnd() + eol();
    const items: Item[] = [];
    const rows = 1 + next(8);
    for (let r = 0; r < rows; r++) {
      while (next(4) === 0) text += eol();
      const [a, b, c] = [value(), value(), value()];
      let href = `/${r}`;
      for (let n = next(3); n > 0; n--) href += pick(SAFE);
      text += [cell(a), cell(b), cell(href), cell(c)].join(',');
      if (r < rows - 1 || next(2)) text += eol();
      const metadata: Metadata = {};
      if (a !== undefined) metadata.a = a;
      if (b !== undefined) metadata.b = b;
      if (c !== undefined) metadata.c = c;
      items.push({ href, metadata });
    }
    return { text: Buffer.from(text, 'utf8'), items };
  }

  it('read the same in chunks of every size as written', async () => {
    for (let seed = 1; seed <= 300; seed++) {
      const { text, items } = randomList(seed);
      for (const max of [1, 2, 3, 5, 16, 1 << 20]) {
        const got = await parseChunks(randomChunks(text, seed * 7 + max, max));
        if (JSON.stringify(got) !== JSON.stringify(items)) expect({ seed, max, text: text.toString(), got }).toEqual({ seed, max, text: text.toString(), got: items });
      }
    }
  });
});
