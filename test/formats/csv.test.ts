import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseList } from '../../src/formats/index.js';
import { format, parseError, parseText } from './helpers.js';

describe('CSV lists: reading', () => {
  it('reads list values, items, nested keys, quoting, CRLF and LF, a BOM and blank lines', async () => {
    const text = '\ufefflist.name,list.metadata.owner,item.href,item.metadata.name,item.metadata.print.copies,item.metadata.note\r\n'
      + 'Monday,ops,/services/store/repo/a,"A, first","2","say ""hi""\nthere"\r\n'
      + '\r\n'
      + ',,https://example.com/b.pdf,B,,""\n'
      + 'Monday,,/c,C,1,\n';
    expect(await parseText('csv', text)).toEqual({
      name: 'Monday',
      metadata: { owner: 'ops' },
      items: [
        { href: '/services/store/repo/a', metadata: { name: 'A, first', print: { copies: '2' }, note: 'say "hi"\nthere' } },
        // unquoted empty = no value; quoted empty = the empty string
        { href: 'https://example.com/b.pdf', metadata: { name: 'B', note: '' } },
        { href: '/c', metadata: { name: 'C', print: { copies: '1' } } },
      ],
    });
  });

  it('takes list values from any row; a row with no item columns only carries list values', async () => {
    const text = 'item.href,list.metadata.a,list.name\n/x,,\n,1,late\n/y,1,late\n';
    expect(await parseText('csv', text)).toEqual({ name: 'late', metadata: { a: '1' }, items: [{ href: '/x', metadata: {} }, { href: '/y', metadata: {} }] });
    expect(await parseText('csv', 'item.href\n')).toEqual({ metadata: {}, items: [] });
    // a quoted empty first field after blank lines
    expect(await parseText('csv', 'item.metadata.a,item.href\n\r\n\n"",/x\n,/y')).toEqual({ metadata: {}, items: [{ href: '/x', metadata: { a: '' } }, { href: '/y', metadata: {} }] });
  });

  it('reads escaped dots and "__proto__" as plain keys', async () => {
    const { items } = await parseText('csv', 'item.href,item.metadata.a\\.b,item.metadata.__proto__.x\n/x,1,2\n');
    expect(JSON.stringify(items[0]!.metadata)).toBe('{"a.b":"1","__proto__":{"x":"2"}}');
    expect(Object.getPrototypeOf(items[0]!.metadata)).toBe(Object.prototype);
  });

  it('yields items as rows arrive, before the input ends', async () => {
    const input = new PassThrough();
    const parsed = parseList(format('csv'), input);
    const it = parsed.items[Symbol.asyncIterator]();
    input.write('item.href,item.metadata.n\n/a,1\n/b,');
    expect((await it.next()).value).toMatchObject({ href: '/a', metadata: { n: '1' }, at: { row: 2 } });
    expect(() => parsed.header()).toThrow(/only after its items/);
    input.end('2\n');
    expect((await it.next()).value).toMatchObject({ href: '/b', at: { row: 3 } });
    expect((await it.next()).done).toBe(true);
    expect(parsed.header()).toEqual({ metadata: {} });
  });
});

describe('CSV lists: bad input is a 400 naming the row and column', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['empty body', '\r\n\n', { row: 1, column: 'item.href' }],
    ['missing item.href column', 'list.name,item.metadata.a\nx,1\n', { row: 1, column: 'item.href' }],
    ['unknown column', 'item.href,item.meta.a\n/x,1\n', { row: 1, column: 'item.meta.a' }],
    ['bare item.metadata column', 'item.href,item.metadata\n/x,1\n', { row: 1, column: 'item.metadata' }],
    ['column twice', 'item.href,item.metadata.a,item.metadata.a\n/x,1,2\n', { row: 1, column: 'item.metadata.a' }],
    ['unterminated quote', 'item.href,item.metadata.a\n/x,1\n/y,"open\n/z,2\n', { row: 3, column: 'item.metadata.a' }],
    ['quote inside an unquoted field', 'item.href,item.metadata.a\n/x,ab"c\n', { row: 2, column: 'item.metadata.a' }],
    ['text after a closing quote', 'item.href,item.metadata.a\n/x,"ab"c\n', { row: 2, column: 'item.metadata.a' }],
    ['too many fields', 'item.href,item.metadata.a\n/x,1\n/y,1,2\n', { row: 3 }],
    ['too few fields', 'item.href,item.metadata.a\n/x\n', { row: 2 }],
    ['empty href with item values', 'item.href,item.metadata.a\n,1\n', { row: 2, column: 'item.href' }],
    ['quoted empty href', 'item.href\n""\n', { row: 2, column: 'item.href' }],
    ['list value differs from an earlier row', 'list.name,item.href\nA,/x\nB,/y\n', { row: 3, column: 'list.name' }],
    ['list metadata differs from an earlier row', 'list.metadata.k,item.href\nA,/x\nB,/y\n', { row: 3, column: 'list.metadata.k' }],
    ['a key that is both a value and an object', 'item.href,item.metadata.a,item.metadata.a.b\n/x,1,2\n', { row: 2, column: 'item.metadata.a.b' }],
  ];
  it.each(cases)('%s', async (_, text, details) => {
    const err = await parseError('csv', text);
    expect(err.status).toBe(400);
    expect(err.code).toBe('INVALID_CSV');
    expect(err.details).toMatchObject(details);
    if (!('column' in details)) expect(err.details).not.toHaveProperty('column');
    expect(err.message).toContain(`row ${details.row as number}`);
  });

  it('limits: record length (400 naming the row), metadata columns (400), items (413)', async () => {
    const long = await parseError('csv', `item.href\n/x\n/${'y'.repeat(200)}\n`, { maxRecordChars: 100 });
    expect(long.details).toMatchObject({ row: 3 });
    const cols = await parseError('csv', 'item.href,item.metadata.a,item.metadata.b,item.metadata.c\n', { maxKeys: 2 });
    expect(cols.details).toEqual({ row: 1, column: 'item.metadata.c' });
    const many = await parseError('csv', 'item.href\n/a\n/b\n/c\n', { maxItems: 2 });
    expect([many.status, many.code]).toEqual([413, 'LIST_TOO_LARGE']);
  });

  it('stops reading at the first error and leaves the source undestroyed, unpiped', async () => {
    const input = new PassThrough();
    input.write('item.href,item.metadata.a\n/x,1,2\n');
    input.write('/y,1\n'); // the body goes on, unread
    const parsed = parseList(format('csv'), input);
    await expect((async () => { for await (const _ of parsed.items); })()).rejects.toMatchObject({ code: 'INVALID_CSV' });
    expect(input.destroyed).toBe(false);
    expect(input.listenerCount('data')).toBe(0);
    expect(input.listenerCount('error')).toBe(0);
  });

  it('a failing source rejects the items with its own error', async () => {
    const input = new PassThrough();
    const parsed = parseList(format('csv'), input);
    const done = (async () => { for await (const _ of parsed.items); })();
    input.write('item.href\n/x\n');
    input.destroy(new Error('client went away'));
    await expect(done).rejects.toThrow('client went away');
  });
});
