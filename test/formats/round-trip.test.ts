import { describe, expect, it } from 'vitest';
import { type ListItem, type Metadata, collectList, parseList, writeList } from '../../src/formats/index.js';
import { chunked, format, source } from './helpers.js';
import { readAll } from '../helpers/streams.js';

/**
 * What CSV and RList represent (docs/formats.md), written independently of
 * the module: strings stay; other values become their JSON text; objects
 * without a string inside vanish. JSON keeps everything.
 */
function textual(meta: Metadata): Metadata {
  const out: Metadata = {};
  for (const key of Object.keys(meta)) {
    const v = meta[key];
    let value: unknown;
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
      const inner = textual(v as Metadata);
      if (Object.keys(inner).length === 0) continue;
      value = inner;
    } else value = typeof v === 'string' ? v : JSON.stringify(v);
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

type List = { name?: string; metadata: Metadata; items: ListItem[] };

async function roundTrip(name: 'json' | 'csv' | 'rlist', list: List, seed = 1): Promise<{ list: List; text: string }> {
  const text = await readAll(await writeList(format(name), source(list.name, list.metadata, list.items)));
  const back = await collectList(parseList(format(name), chunked(text, seed)));
  return { text, list: { ...(back.name !== undefined ? { name: back.name } : {}), metadata: back.metadata, items: back.items.map(({ href, metadata }) => ({ href, metadata })) } };
}

const normalised = (list: List): List => ({
  ...(list.name !== undefined ? { name: list.name } : {}),
  metadata: textual(list.metadata),
  items: list.items.map((i) => ({ href: i.href, metadata: textual(i.metadata) })),
});

/** JSON with keys sorted: key order carries no meaning (jsonb drops it too), while "__proto__" keys must compare as keys. */
const canonical = (v: unknown): unknown =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
    ? Object.keys(v).sort().map((k) => [k, canonical((v as Metadata)[k])])
    : Array.isArray(v) ? v.map(canonical) : v;
const canon = (l: List) => JSON.stringify(canonical(l), null, 1);
const same = (a: List, b: List) => expect(canon(a)).toBe(canon(b));

const EXAMPLE: List = {
  name: 'Reprints, Monday',
  metadata: { PROGRAM: { NAME: 'x', VERSION: 2 }, owner: 'ops', flags: [1, 'a'], none: null, empty: {}, 'dotted.key': 'd' },
  items: [
    { href: '/services/store/repo/0b1c', metadata: { name: 'A "quoted", name', copies: 2, duplex: true, finish: { staple: 'left', punch: '' } } },
    { href: 'https://example.com/b.pdf?x=1,2', metadata: {} },
    { href: '/c', metadata: { note: 'line 1\r\nline 2\n', 'key=with;all[the]chars': 'ü 中 🎉' } },
  ],
};

describe('export then import gives back the same list', () => {
  it('JSON keeps every type', async () => {
    same((await roundTrip('json', EXAMPLE)).list, { ...EXAMPLE, items: EXAMPLE.items });
  });

  it.each(['csv', 'rlist'] as const)('%s gives back the list as text represents it', async (name) => {
    const { list } = await roundTrip(name, EXAMPLE);
    same(list, normalised(EXAMPLE));
    // what the normalisation means, spelled out once
    expect(list.items[0]!.metadata).toEqual({ name: 'A "quoted", name', copies: '2', duplex: 'true', finish: { staple: 'left', punch: '' } });
    expect(list.metadata).toEqual({ PROGRAM: { NAME: 'x', VERSION: '2' }, owner: 'ops', flags: '[1,"a"]', none: 'null', 'dotted.key': 'd' });
  });

  it.each(['csv', 'rlist'] as const)('%s: a list without items, and one with neither name nor metadata', async (name) => {
    same((await roundTrip(name, { name: '', metadata: { a: '' }, items: [] })).list, { name: '', metadata: { a: '' }, items: [] });
    same((await roundTrip(name, { metadata: {}, items: [] })).list, { metadata: {}, items: [] });
  });

  it('CSV: the text has one header row, list values on the first row only, CRLF', async () => {
    const { text } = await roundTrip('csv', { name: 'L', metadata: {}, items: [{ href: '/a', metadata: { n: '1' } }, { href: '/b', metadata: { m: '' } }] });
    expect(text).toBe('list.name,item.href,item.metadata.n,item.metadata.m\r\nL,/a,1,\r\n,/b,,""\r\n');
  });

  it('an item that is an RList/CSV of itself survives as a value', async () => {
    const nested = { metadata: {}, items: [{ href: '/x', metadata: { csv: 'item.href\r\n"/a",b\r\n', rli: '[DOCUMENT_1]\r\nHREF="/a"\r\n; c' } }] };
    for (const name of ['csv', 'rlist'] as const) same((await roundTrip(name, nested)).list, nested);
  });
});

/** A seeded PRNG, so a failing case can be replayed. */
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PIECES = [',', '"', '""', '\n', '\r\n', '\r', ';', '=', '[', ']', '[DOCUMENT_1]', '\\', '\\"', '.', ' ', '\t', 'ü', '中', '🎉', '\u00a0', 'a', 'Z', '0', 'NAME', 'name', 'HREF', 'FILE', 'item.href', '__proto__', 'constructor', "'", '#', '\ufeff'];

/** `protoKeys: false`: no key is exactly `__proto__` (JSON refuses one as every JSON body does, 400 INVALID_KEY; CSV and RList keep it as data). */
function generator(seed: number, { protoKeys = true } = {}) {
  const rnd = prng(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
  const text = (max: number) => Array.from({ length: Math.floor(rnd() * max) }, () => pick(PIECES)).join('');
  const value = (depth: number): unknown => {
    const r = rnd();
    if (r < 0.55) return text(6);
    if (r < 0.62) return Math.floor(rnd() * 1000) - 500;
    if (r < 0.66) return rnd() < 0.5;
    if (r < 0.69) return null;
    if (r < 0.72) return [text(3), 1];
    return depth < 2 ? meta(depth + 1) : text(4);
  };
  const meta = (depth = 0): Metadata => {
    const out: Metadata = {};
    const n = Math.floor(rnd() * 5);
    for (let i = 0; i < n; i++) {
      const key = text(4);
      const v = value(depth);
      if (key !== '__proto__' || protoKeys) Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true });
    }
    return out;
  };
  const list = (): List => ({
    ...(rnd() < 0.7 ? { name: text(5) } : {}),
    metadata: rnd() < 0.3 ? { PROGRAM: meta(1), SENDER: { a: text(3) }, ...meta() } : meta(),
    items: Array.from({ length: Math.floor(rnd() * 6) }, () => ({ href: `/${text(5)}`, metadata: meta() })),
  });
  return list;
}

describe('round trips of random lists (keys and values with commas, quotes, line breaks, unicode, ";", "=", brackets, dots)', () => {
  it.each(['json', 'csv', 'rlist'] as const)('%s: 200 random lists, parsed in random chunks', { timeout: 120_000 }, async (name) => {
    for (let seed = 1; seed <= 200; seed++) {
      const list = generator(seed, { protoKeys: name !== 'json' })();
      const { list: back, text } = await roundTrip(name, list, seed);
      const expected = name === 'json' ? list : normalised(list);
      if (canon(back) !== canon(expected)) {
        throw new Error(`seed ${seed}: ${JSON.stringify(expected)}\nwritten:\n${text}\nread back: ${JSON.stringify(back)}`);
      }
    }
  });
});
