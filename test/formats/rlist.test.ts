import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseList } from '../../src/formats/index.js';
import { format, parseError, parseText, source } from './helpers.js';
import { readAll } from '../helpers/streams.js';
import { writeRlist } from '../../src/formats/rlist.js';

const SAMPLE = [
  '; written by hand',
  '[PROGRAM]',
  'NAME="Reprint"',
  'VERSION = 2.1   ',
  '',
  '  ; an indented comment with a "quote',
  '[JobInfo]',
  'OWNER="a \\"quoted\\" name; not a comment"',
  'PATH="C:\\jobs\\new\\a.pdf"',
  'NOTE="two',
  'lines"   ; trailing comment',
  '[SENDER]',
  'HOST=',
  '[DOCUMENT_1]',
  'HREF="/services/store/repo/a"',
  'NAME="A"',
  'COPIES="2"',
  'finish.staple="left"',
  '"HREF"="a key, not the href"',
  '[DOCUMENT_7]',
  'file=\\\\server\\share\\b.pdf',
  '[PROCESSING]',
  'MODE="duplex"',
].join('\r\n');

describe('RList: reading', () => {
  it('reads sections, CRLF, blank lines, comments, quoting, bare values and reserved keys', async () => {
    expect(await parseText('rlist', SAMPLE)).toEqual({
      metadata: {
        PROGRAM: { NAME: 'Reprint', VERSION: '2.1' },
        JOBINFO: { OWNER: 'a "quoted" name; not a comment', PATH: 'C:\\jobs\\new\\a.pdf', NOTE: 'two\r\nlines' },
        SENDER: { HOST: '' },
        PROCESSING: { MODE: 'duplex' },
      },
      items: [
        { href: '/services/store/repo/a', metadata: { name: 'A', COPIES: '2', finish: { staple: 'left' }, HREF: 'a key, not the href' } },
        { href: '\\\\server\\share\\b.pdf', metadata: {} },
      ],
    });
  });

  it('reads [LIST] as the list name and other list metadata', async () => {
    const text = '[LIST]\nNAME="Mine"\n"NAME"="a key"\ncolor=red\n[DOCUMENT_0]\nHREF=/x\n';
    expect(await parseText('rlist', text)).toEqual({ name: 'Mine', metadata: { NAME: 'a key', color: 'red' }, items: [{ href: '/x', metadata: {} }] });
  });

  it('yields each document when its section ends, before the input does', async () => {
    const input = new PassThrough();
    const parsed = parseList(format('rlist'), input);
    const it = parsed.items[Symbol.asyncIterator]();
    input.write('[DOCUMENT_1]\nHREF=/a\n[DOCUMENT_2]\nHREF=');
    expect((await it.next()).value).toEqual({ href: '/a', metadata: {}, at: { section: 'DOCUMENT_1' } });
    input.end('/b\n[SENDER]\nX=1');
    expect((await it.next()).value).toMatchObject({ href: '/b' });
    expect((await it.next()).done).toBe(true);
    expect(parsed.header()).toEqual({ metadata: { SENDER: { X: '1' } } });
  });

  it('writes CRLF text with quoted values and reserved words kept apart', async () => {
    const text = await readAll(writeRlist(source('L', { PROGRAM: { NAME: 'p' }, name: 'n', 'a.b': { c: 'x"\\' } }, [
      { href: '/d', metadata: { name: 'D', NAME: 'upper', 'x y': '1' } },
    ])));
    expect(text).toBe([
      '[LIST]', 'NAME="L"', '"name"="n"', '"a\\\\.b.c"="x\\"\\\\"',
      '[PROGRAM]', 'NAME="p"',
      '[DOCUMENT_1]', 'HREF="/d"', 'NAME="D"', '"NAME"="upper"', '"x y"="1"', '',
    ].join('\r\n'));
  });
});

describe('RList: a broken section is a 400 naming the section and key', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['missing "]"', '[PROGRAM]\nA=1\n[DOCUMENT_1\nHREF=/x\n', { section: 'DOCUMENT_1', line: 3 }],
    ['missing "]" at the end', '[DOCUMENT_1', { section: 'DOCUMENT_1', line: 1 }],
    ['text after "]"', '[PROGRAM] x\n', { section: 'PROGRAM', line: 1 }],
    ['a line that is not KEY=value', '[JOBINFO]\nA=1\njust words\nB=2\n', { section: 'JOBINFO', key: 'just words', line: 3 }],
    ['a line starting with "="', '[JOBINFO]\n="x"\n', { section: 'JOBINFO', key: '', line: 2 }],
    ['an entry before any section', 'A=1\n[PROGRAM]\n', { section: null, key: 'A', line: 1 }],
    ['garbage before any section', 'garbage\n', { section: null, key: 'garbage', line: 1 }],
    ['DOCUMENT without HREF or FILE', '[DOCUMENT_1]\nNAME=x\n[DOCUMENT_2]\nHREF=/y\n', { section: 'DOCUMENT_1', key: 'HREF', line: 1 }],
    ['quoted "HREF" is no href', '[DOCUMENT_1]\n"HREF"=/x\n', { section: 'DOCUMENT_1', key: 'HREF' }],
    ['empty HREF', '[DOCUMENT_1]\nHREF=""\n', { section: 'DOCUMENT_1', key: 'HREF', line: 2 }],
    ['HREF and FILE', '[DOCUMENT_1]\nHREF=/a\nFILE=/b\n', { section: 'DOCUMENT_1', key: 'FILE', line: 3 }],
    ['duplicate DOCUMENT number', '[DOCUMENT_1]\nHREF=/a\n[DOCUMENT_01]\nHREF=/b\n', { section: 'DOCUMENT_01', line: 3 }],
    ['DOCUMENT out of order', '[DOCUMENT_2]\nHREF=/a\n[DOCUMENT_1]\nHREF=/b\n', { section: 'DOCUMENT_1', line: 3 }],
    ['unknown section', '[PROGRAM]\nA=1\n[PRINTER]\nB=2\n', { section: 'PRINTER', line: 3 }],
    ['DOCUMENT without a number', '[DOCUMENT_]\nHREF=/a\n', { section: 'DOCUMENT_' }],
    ['a key given twice', '[SENDER]\nA=1\nA=1\n', { section: 'SENDER', key: 'A', line: 3 }],
    ['a key that is a value and an object', '[DOCUMENT_1]\nHREF=/a\nx=1\nx.y=2\n', { section: 'DOCUMENT_1', key: 'x.y', line: 4 }],
    ['NAME and "name" in a document', '[DOCUMENT_1]\nHREF=/a\nNAME=1\n"name"=2\n', { section: 'DOCUMENT_1', key: 'name' }],
    ['unterminated quoted value', '[DOCUMENT_1]\nHREF=/a\nNOTE="open\nX=1\n', { section: 'DOCUMENT_1', key: 'NOTE', line: 3 }],
    ['text after a closing quote', '[DOCUMENT_1]\nHREF="/a" b\n', { section: 'DOCUMENT_1', key: 'HREF', line: 2 }],
    ['a quoted key without "="', '[DOCUMENT_1]\nHREF=/a\n"K"\nX=1\n', { section: 'DOCUMENT_1', key: 'K', line: 3 }],
    ['a quote inside an unquoted key', '[DOCUMENT_1]\nA"B=1\n', { section: 'DOCUMENT_1', key: 'A' }],
  ];
  it.each(cases)('%s', async (_, text, details) => {
    const err = await parseError('rlist', text);
    expect([err.status, err.code]).toEqual([400, 'INVALID_RLIST']);
    expect(err.details).toMatchObject(details);
    if (details.section) expect(err.message).toContain(`[${details.section as string}`);
  });

  it('limits: entry length, keys per section, items', async () => {
    const long = await parseError('rlist', `[DOCUMENT_1]\nHREF=/a\nNOTE="${'x'.repeat(500)}"\n`, { maxRecordChars: 100 });
    expect(long.details).toMatchObject({ section: 'DOCUMENT_1', key: 'NOTE', line: 3 });
    const keys = await parseError('rlist', '[DOCUMENT_1]\nHREF=/a\nA=1\nB=2\nC=3\n', { maxKeys: 2 });
    expect(keys.details).toMatchObject({ section: 'DOCUMENT_1', key: 'C' });
    const many = await parseError('rlist', '[DOCUMENT_1]\nHREF=/a\n[DOCUMENT_2]\nHREF=/b\n', { maxItems: 1 });
    expect([many.status, many.code]).toEqual([413, 'LIST_TOO_LARGE']);
  });

  it('stops at the first error and leaves the source undestroyed, unpiped', async () => {
    const input = new PassThrough();
    input.write('[DOCUMENT_1]\nHREF=/a\n[BROKEN\n');
    input.write('[DOCUMENT_2]\n'); // the body goes on, unread
    const parsed = parseList(format('rlist'), input);
    await expect((async () => { for await (const _ of parsed.items); })()).rejects.toMatchObject({ code: 'INVALID_RLIST' });
    expect(input.destroyed).toBe(false);
    expect(input.listenerCount('data')).toBe(0);
    expect(input.listenerCount('error')).toBe(0);
  });
});
