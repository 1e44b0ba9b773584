import { readFileSync } from 'node:fs';
import { Transform } from 'node:stream';
import { Parser } from 'csv-parse';
import { describe, expect, it } from 'vitest';

/**
 * What formats/csv.ts (`MarkingParser`) relies on beyond csv-parse's public
 * API: it subclasses `Parser`, wraps `_transform` and `push`, reads
 * `info.records` and `info.bytes` at each record's push, and reads and sets
 * `state.record` and `state.stop`. csv-parse is pinned exactly in
 * package.json; these fail when an upgrade moves any of it, before the
 * parser quietly marks the wrong fields.
 */

type Internals = { state: { record: unknown; stop: unknown }; info: { records: unknown; bytes: unknown } };
const internals = (p: Parser) => p as unknown as Internals;
const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('csv-parse internals formats/csv.ts reads', () => {
  it('the dependency is pinned exactly, to the installed version', () => {
    const pinned = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }).dependencies['csv-parse'];
    const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as { packages: Record<string, { version?: string; dependencies?: Record<string, string> }> };
    const installed = (JSON.parse(readFileSync(new URL('../../node_modules/csv-parse/package.json', import.meta.url), 'utf8')) as { version: string }).version;
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(lock.packages['']!.dependencies!['csv-parse']).toBe(pinned);
    expect(lock.packages['node_modules/csv-parse']!.version).toBe(pinned);
    expect(installed).toBe(pinned);
  });

  it('Parser is a Transform whose _transform and push a subclass overrides', () => {
    expect(Object.getPrototypeOf(Parser)).toBe(Transform);
    expect(Object.hasOwn(Parser.prototype, '_transform')).toBe(true);
    expect(typeof Parser.prototype.push).toBe('function');
  });

  it('state.record holds the fields of the record being parsed, state.stop is a boolean', async () => {
    const p = new Parser({ record_delimiter: ['\r\n', '\n'] });
    const { state } = internals(p);
    expect(state.stop).toBe(false);
    expect(Array.isArray(state.record)).toBe(true);
    p.write(Buffer.from('h\n1,2,3,4,5,6,7,8,'));
    await tick();
    // the same object, growing by a field per comma before the record ends (the last bytes wait for what follows)
    expect(internals(p).state).toBe(state);
    expect((state.record as unknown[]).length).toBeGreaterThanOrEqual(6);
    expect((state.record as unknown[]).every((f) => typeof f === 'string')).toBe(true);
    p.destroy();
  });

  it('info.records counts a record and info.bytes is the offset past it (its delimiter, a BOM and blank lines before it counted) when it is pushed', async () => {
    const seen: [unknown, unknown, string[]][] = [];
    class Watching extends Parser {
      override push(record: unknown, encoding?: BufferEncoding): boolean {
        const { info } = internals(this);
        if (Array.isArray(record)) seen.push([info.records, info.bytes, record as string[]]);
        return super.push(record, encoding);
      }
    }
    const p = new Watching({ bom: true, skip_empty_lines: true, record_delimiter: ['\r\n', '\n'] });
    p.resume();
    const ended = new Promise((resolve) => p.on('end', resolve));
    p.write(Buffer.from('\ufeffa,b\r\n\nc,d\n'));
    p.write(Buffer.from('e,'));
    p.end(Buffer.from('f'));
    await ended;
    expect(seen).toEqual([[1, 8, ['a', 'b']], [2, 13, ['c', 'd']], [3, 16, ['e', 'f']]]);
  });

  it('a parser whose state.stop is set takes no more input', async () => {
    const records: unknown[] = [];
    const p = new Parser({ record_delimiter: ['\r\n', '\n'] });
    p.on('data', (r) => records.push(r));
    p.write(Buffer.from('a\nb\nc\n'));
    await tick();
    const before = records.length;
    expect(before).toBeGreaterThan(0);
    internals(p).state.stop = true;
    p.write(Buffer.from('d\ne\n'));
    await tick();
    expect(records.length).toBe(before);
    p.destroy();
  });
});
