import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors/app-error.js';
import { collectList, parseList } from '../../src/formats/index.js';
import { format } from './helpers.js';

const MB = 1024 * 1024;
const CHUNK = 64 * 1024;

/** `total` bytes made by `fill`, produced lazily; `pulled()` tells how many the consumer asked for. */
function lazy(total: number, fill: (chunk: Buffer, offset: number) => void, prefix = '') {
  let offset = 0;
  const head = Buffer.from(prefix);
  const stream = new Readable({
    read() {
      if (offset >= total) return void this.push(null);
      const chunk = offset === 0 ? Buffer.concat([head, Buffer.alloc(CHUNK - head.length)]) : Buffer.alloc(Math.min(CHUNK, total - offset));
      fill(offset === 0 ? chunk.subarray(head.length) : chunk, offset);
      offset += chunk.length;
      this.push(chunk);
    },
  });
  return { stream, pulled: () => offset };
}

/** Pseudo-random bytes (xorshift), fast enough for 100 MB. */
function randomFill(seed: number) {
  let s = seed >>> 0 || 1;
  return (chunk: Buffer) => {
    for (let i = 0; i < chunk.length; i++) {
      s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
      chunk[i] = s & 0xff;
    }
  };
}

const repeatFill = (text: string) => {
  const unit = Buffer.from(text);
  return (chunk: Buffer, offset: number) => {
    for (let i = 0; i < chunk.length; i++) chunk[i] = unit[(offset + i) % unit.length]!;
  };
};

// a forced collection makes heapUsed mean "still held", so growth shows what the parser keeps, not garbage not yet collected
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heldHeap = () => {
  gc();
  return process.memoryUsage().heapUsed;
};

/** Runs a parse to its end, sampling the held heap every 100,000 items and at the end; returns the error, figures and the items seen. */
async function measure(name: 'json' | 'csv' | 'rlist', stream: Readable, limits = {}) {
  const rssBefore = process.memoryUsage().rss;
  const before = heldHeap();
  let peak = before;
  let items = 0;
  let error: unknown;
  try {
    for await (const _ of parseList(format(name), stream, limits).items) {
      if (++items % 100_000 === 0) peak = Math.max(peak, heldHeap());
    }
  } catch (err) {
    error = err;
  }
  peak = Math.max(peak, heldHeap());
  return { error, items, heapGrowthMB: (peak - before) / MB, rssGrowthMB: (process.memoryUsage().rss - rssBefore) / MB };
}

const report = (what: string, figures: object) => console.log(`${what}: ${JSON.stringify(figures, (_, v: unknown) => (typeof v === 'number' ? Math.round(v * 10) / 10 : v))}`);

describe('100 MB of garbage: an early 400, memory flat', () => {
  const cases: [string, 'csv' | 'rlist', (c: Buffer, o: number) => void, string, string][] = [
    ['CSV: random bytes', 'csv', randomFill(7), '', 'INVALID_CSV'],
    ['CSV: a good header, then random bytes', 'csv', randomFill(8), 'item.href,item.metadata.a\r\n', 'INVALID_CSV'],
    ['CSV: a quote opened and never closed', 'csv', repeatFill('abc,def\n'), 'item.href,item.metadata.a\r\n/x,"', 'INVALID_CSV'],
    ['CSV: one endless line', 'csv', repeatFill('x'), 'item.href\r\n', 'INVALID_CSV'],
    // empty fields have no characters for the record size limit to count: the field count stops these
    ['CSV: a good header, then one endless row of commas', 'csv', repeatFill(','), 'item.href,item.metadata.a\r\n/x', 'INVALID_CSV'],
    ['CSV: a header of commas', 'csv', repeatFill(','), 'item.href', 'INVALID_CSV'],
    ['RList: random bytes', 'rlist', randomFill(9), '', 'INVALID_RLIST'],
    ['RList: a quoted value never closed', 'rlist', repeatFill('[DOCUMENT_2]\r\nHREF=/y\r\n'), '[DOCUMENT_1]\r\nHREF="', 'INVALID_RLIST'],
  ];
  it.each(cases)('%s', async (what, name, fill, prefix, code) => {
    const input = lazy(100 * MB, fill, prefix);
    const m = await measure(name, input.stream);
    report(what, { pulledMB: input.pulled() / MB, heapGrowthMB: m.heapGrowthMB, rssGrowthMB: m.rssGrowthMB });
    expect(m.error).toBeInstanceOf(AppError);
    expect(m.error).toMatchObject({ status: 400, code });
    expect(m.items).toBe(0);
    // stopped within the first few chunks (one 64 KiB record limit plus the stream's read-ahead), not after 100 MB
    expect(input.pulled()).toBeLessThan(2 * MB);
    expect(m.heapGrowthMB).toBeLessThan(8);
  });

  it('JSON: read only up to its byte limit, then 413', async () => {
    const input = lazy(100 * MB, repeatFill(' '), '{"name":"');
    const m = await measure('json', input.stream, { maxJsonBytes: 4 * MB });
    report('JSON: 100 MB body', { pulledMB: input.pulled() / MB, heapGrowthMB: m.heapGrowthMB, rssGrowthMB: m.rssGrowthMB });
    expect(m.error).toMatchObject({ status: 413, code: 'PAYLOAD_TOO_LARGE' });
    expect(input.pulled()).toBeLessThan(5 * MB);
  });
});

describe('large valid lists stream through in flat memory', () => {
  it.each([
    ['CSV', 'csv', 'item.href,item.metadata.name,item.metadata.copies\r\n', '/services/store/repo/0b1c,"Name, quoted",2\r\n'],
    ['CSV, a quoted empty field in every row', 'csv', 'item.href,item.metadata.name,item.metadata.copies\r\n', '/services/store/repo/0b1c,"Name, quoted",""\r\n'],
    ['RList', 'rlist', '[PROGRAM]\r\nNAME="x"\r\n', '[DOCUMENT_1]\r\nHREF="/services/store/repo/0b1c"\r\nNAME="Name"\r\n'],
  ] as const)('%s: 20 MB of items, read without keeping them', { timeout: 180_000 }, async (what, name, header, row) => {
    // RList numbers must ascend, so each repetition of the row gets its own number
    let n = 0;
    const rows = new Readable({
      read() {
        if (n * row.length > 20 * MB) return void this.push(null);
        let out = n === 0 ? header : '';
        for (let i = 0; i < 500; i++, n++) out += name === 'csv' ? row : row.replace('_1]', `_${n + 1}]`);
        this.push(out);
      },
    });
    const m = await measure(name, rows, { maxItems: 10_000_000 });
    report(`${what}: 20 MB valid`, { items: m.items, heapGrowthMB: m.heapGrowthMB, rssGrowthMB: m.rssGrowthMB });
    expect(m.error).toBeUndefined();
    expect(m.items).toBe(n);
    expect(m.heapGrowthMB).toBeLessThan(8);
  });

  it('CSV: 20 MB of blank lines before a row with a quoted empty field, none of it kept', { timeout: 180_000 }, async () => {
    // what a row's quoted empties are found in is input kept as Buffers (outside the JS heap), so both count
    const held = () => {
      gc();
      const m = process.memoryUsage();
      return m.heapUsed + m.arrayBuffers;
    };
    const before = held();
    let peak = 0;
    let sent = 0;
    const blank = Buffer.from('\r\n\n'.repeat(CHUNK / 4));
    const input = new Readable({
      read() {
        if (sent === 0) this.push('item.href,item.metadata.a\r\n"/first",""\r\n');
        else if (sent > 20 * MB) return void this.push(null);
        else if (sent + CHUNK > 20 * MB) this.push('/x,""');
        else this.push(Buffer.from(blank));
        if (sent % MB === 0) peak = Math.max(peak, held() - before);
        sent += CHUNK;
      },
    });
    const list = await collectList(parseList(format('csv'), input));
    peak = Math.max(peak, held() - before);
    report('CSV: 20 MB of blank lines', { heldGrowthMB: peak / MB });
    expect(list.items.map(({ href, metadata }) => ({ href, metadata }))).toEqual([
      { href: '/first', metadata: { a: '' } },
      { href: '/x', metadata: { a: '' } },
    ]);
    expect(peak).toBeLessThan(8 * MB);
  });
});

describe('CSV: too many fields in a row', () => {
  it('names the row: the header, or the row past the header\'s count', async () => {
    const body = (text: string) => Readable.from([Buffer.from(text)]);
    const commas = ','.repeat(200 * 1024);
    await expect(collectList(parseList(format('csv'), body(`item.href,item.metadata.a\r\n/x,1\r\n/y${commas}\r\n`)))).rejects.toMatchObject({
      status: 400, code: 'INVALID_CSV', details: { row: 3 }, message: 'row 3: the row does not have as many fields as the header',
    });
    await expect(collectList(parseList(format('csv'), body(`item.href${commas}\r\n`), { maxKeys: 10 }))).rejects.toMatchObject({
      status: 400, code: 'INVALID_CSV', details: { row: 1 }, message: 'row 1: the header has more than 22 columns',
    });
  });
});
