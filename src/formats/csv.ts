import { Readable, type TransformCallback } from 'node:stream';
import { CsvError, type Options, Parser } from 'csv-parse';
import { stringify } from 'csv-stringify/sync';
import { invalidCsv, listTooLarge } from './format-errors.js';
import { type ListLimits, type ListSource, type ParsedList, type ParsedListItem, fromBatches, headerNotReady } from './list-document.js';
import { MetadataBuilder, flatten, joinPath, splitPath } from './metadata-paths.js';

/**
 * CSV lists (docs/formats.md): a header row of keys (`list.name`,
 * `list.metadata.<path>`, `item.href`, `item.metadata.<path>`), then one row
 * per item. List values may stand on any row; a later row repeats them or
 * leaves them empty. An unquoted empty field is "no value", a quoted one
 * (`""`) the empty string, so both survive export and import (csv-parse
 * gives both as `''`; `MarkingParser` tells them apart).
 */

type Column =
  | { kind: 'list.name' }
  | { kind: 'list.metadata'; path: string[] }
  | { kind: 'item.href' }
  | { kind: 'item.metadata'; path: string[] };

/** Marks a quoted empty field (`""`), which the parsed record alone does not tell from an unquoted one. */
const QUOTED_EMPTY = Symbol('quoted empty');
type Field = string | typeof QUOTED_EMPTY;

/**
 * Finds the quoted empty fields of a record in its text (the record's bytes
 * as latin1, one character per byte: only the ASCII quote, comma, CR and LF
 * are looked at, and no byte of a multi-byte UTF-8 character is one of them).
 * The text may start with the blank lines skipped before the record.
 */
function markQuotedEmpties(record: string[], raw: string): Field[] {
  const fields: Field[] = [...record];
  let i = 0;
  while (raw[i] === '\r' || raw[i] === '\n') i++;
  for (let f = 0; f < record.length && i < raw.length; f++) {
    if (raw[i] !== '"') {
      const comma = raw.indexOf(',', i);
      i = comma < 0 ? raw.length : comma + 1;
      continue;
    }
    let close = raw.indexOf('"', i + 1);
    while (close >= 0 && raw[close + 1] === '"') close = raw.indexOf('"', close + 2);
    if (close < 0) break;
    if (close === i + 1) fields[f] = QUOTED_EMPTY;
    i = close + 2;
  }
  return fields;
}

const CR = 0x0d;
const LF = 0x0a;

/**
 * csv-parse's stream, whose records (after the header) that have an empty
 * field come with their quoted empties marked (`Field[]`). csv-parse's public
 * API does not tell at a price the import can pay: its `raw: true` gives each
 * record's text but costs 0.3–0.4 s of CPU per 1,000,000 rows, a tenth of
 * the parse (every byte appended to a buffer, a string per record), `cast`
 * costs several times the whole parse, and `on_record`
 * builds an info object per record. Instead this keeps the input chunks the
 * record being parsed lies in, and reads `info.bytes`, which csv-parse 7 sets
 * at every record's end (whatever `raw` and `info` say) to the byte offset
 * in the input just past it (past its record delimiter, or the end of the
 * input; a BOM counts): a record spans from the previous one's end to its
 * own, blank lines before it included. Only a record with an empty field has
 * its bytes read. Memory: the chunks from the start of the record being
 * parsed on (blank lines are dropped as they come), so about one record and
 * one chunk. csv-quoted-empties.test.ts holds this to csv-parse's behaviour
 * (every chunking, BOM, CRLF, blank lines, UTF-8).
 *
 * Beyond the public API this reads `info.bytes` and `info.records` at each
 * push and `state.record` / `state.stop` (`#tooManyFields`), csv-parse
 * internals: package.json pins csv-parse exactly, and
 * csv-parse-internals.test.ts fails when an upgrade moves them.
 */
class MarkingParser extends Parser {
  /** The input from `chunksStart` (an offset into the input) on, as it came; the last chunk ends at the input read so far. */
  #chunks: Buffer[] = [];
  #chunksStart = 0;
  /** Where the record being parsed starts (or blank lines before it). */
  #recordStart = 0;
  /** The most fields a record may have: the header's count once it is read. */
  #maxFields: number;

  /** `maxHeaderFields`: the most columns a header can have (readHeader refuses more). */
  constructor(options: Options, maxHeaderFields: number) {
    super(options);
    this.#maxFields = maxHeaderFields;
  }

  override _transform(chunk: Buffer, encoding: BufferEncoding, callback: TransformCallback): void {
    // before the parse: the records it pushes end in this chunk or before
    this.#chunks.push(chunk);
    super._transform(chunk, encoding, (err?: Error | null) => callback(err ?? this.#tooManyFields()));
    this.#dropBefore();
  }

  /**
   * csv-parse checks a record's field count only at its end, and its size
   * limit counts the fields' characters, not the commas: a body of commas
   * would grow one record's array by a field per byte. Checked after every
   * chunk, so a record holds at most one chunk's fields more than allowed.
   */
  #tooManyFields(): Error | undefined {
    const state = (this as unknown as { state: { record: unknown[]; stop: boolean } }).state;
    if (state.record.length <= this.#maxFields) return undefined;
    state.stop = true;
    const row = this.info.records + 1;
    return row === 1
      ? invalidCsv(`row 1: the header has more than ${this.#maxFields} columns`, { row: 1 })
      : invalidCsv(`row ${row}: the row does not have as many fields as the header`, { row });
  }

  override push(record: unknown, encoding?: BufferEncoding): boolean {
    if (Array.isArray(record)) {
      const end = this.info.bytes;
      if (this.info.records === 1) this.#maxFields = (record as string[]).length;
      // the header (record 1) is read as it is
      if (this.info.records > 1 && (record as string[]).includes('')) record = markQuotedEmpties(record as string[], this.#text(this.#recordStart, end));
      this.#recordStart = end;
    }
    return super.push(record, encoding);
  }

  /** The input's bytes `from` to `to` as latin1. */
  #text(from: number, to: number): string {
    let text = '';
    let start = this.#chunksStart;
    for (const chunk of this.#chunks) {
      const end = start + chunk.length;
      if (end > from) text += chunk.toString('latin1', Math.max(from - start, 0), Math.min(to - start, chunk.length));
      if (end >= to) break;
      start = end;
    }
    return text;
  }

  /** Drops the chunks before the record being parsed, and the blank lines (CR, LF) it starts with. */
  #dropBefore(): void {
    const chunks = this.#chunks;
    let start = this.#chunksStart;
    let n = 0;
    for (; n < chunks.length; n++) {
      const chunk = chunks[n]!;
      let at = this.#recordStart - start;
      if (at < chunk.length) {
        while (at < chunk.length && (chunk[at] === CR || chunk[at] === LF)) at++;
        this.#recordStart = start + at;
        if (at < chunk.length) break;
      }
      start += chunk.length;
    }
    if (n > 0) {
      chunks.splice(0, n);
      this.#chunksStart = start;
    }
  }
}

const valueOf = (f: Field | undefined): string | undefined => (f === QUOTED_EMPTY ? '' : f === '' ? undefined : f);

const LIST_META = 'list.metadata.';
const ITEM_META = 'item.metadata.';

/** Reads the header row into columns; every problem names its column. */
function readHeader(fields: string[], limits: ListLimits): Column[] {
  const seen = new Set<string>();
  let listKeys = 0;
  let itemKeys = 0;
  const columns = fields.map((key): Column => {
    let column: Column;
    if (key === 'list.name') column = { kind: 'list.name' };
    else if (key === 'item.href') column = { kind: 'item.href' };
    else if (key.startsWith(LIST_META)) column = { kind: 'list.metadata', path: splitPath(key.slice(LIST_META.length)) };
    else if (key.startsWith(ITEM_META)) column = { kind: 'item.metadata', path: splitPath(key.slice(ITEM_META.length)) };
    else throw invalidCsv(`row 1: unknown column "${key}": expected list.name, list.metadata.<key>, item.href or item.metadata.<key>`, { row: 1, column: key });
    const canonical = 'path' in column ? `${column.kind}.${joinPath(column.path)}` : column.kind;
    if (seen.has(canonical)) throw invalidCsv(`row 1: column "${key}" appears twice`, { row: 1, column: key });
    seen.add(canonical);
    if (column.kind === 'list.metadata') listKeys++;
    if (column.kind === 'item.metadata') itemKeys++;
    if (listKeys > limits.maxKeys || itemKeys > limits.maxKeys) {
      throw invalidCsv(`row 1: more than ${limits.maxKeys} metadata columns`, { row: 1, column: key });
    }
    return column;
  });
  if (!seen.has('item.href')) throw invalidCsv('row 1: the header has no item.href column', { row: 1, column: 'item.href' });
  return columns;
}

const CSV_MESSAGES: Partial<Record<string, string>> = {
  CSV_QUOTE_NOT_CLOSED: 'a quoted field is not closed before the end of the input',
  CSV_INVALID_CLOSING_QUOTE: 'a closing quote is followed by something other than a comma or the end of the row',
  INVALID_OPENING_QUOTE: 'a quote inside an unquoted field (quote the whole field and double inner quotes)',
  CSV_RECORD_INCONSISTENT_FIELDS_LENGTH: 'the row does not have as many fields as the header',
  CSV_MAX_RECORD_SIZE: 'the row is longer than the limit',
};

/** Turns csv-parse's error into a 400 naming the row and, when known, the column. */
function fromCsvError(err: CsvError, header: readonly string[], limits: ListLimits) {
  const records = typeof err.records === 'number' ? err.records : 0;
  const index = typeof err.column === 'number' ? err.column : undefined;
  const column = records > 0 && index !== undefined && err.code !== 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH' ? header[index] : undefined;
  const line = typeof err.lines === 'number' ? err.lines : undefined;
  const base = CSV_MESSAGES[err.code] ?? err.message;
  const what = err.code === 'CSV_MAX_RECORD_SIZE' ? `${base} of ${limits.maxRecordChars} characters` : base;
  return invalidCsv(`row ${records + 1}${column !== undefined ? `, column ${column}` : ''}: ${what}`, {
    row: records + 1,
    ...(column !== undefined ? { column } : {}),
    ...(line !== undefined ? { line } : {}),
  });
}

/**
 * Parses a CSV list as it streams in. The items come in arrays, one per
 * stretch of input the parser had ready (`ItemBatches`), so a large body
 * costs no promise per row. The source is unpiped (not destroyed) when
 * parsing stops.
 */
export function parseCsv(source: Readable, limits: ListLimits): ParsedList {
  let name: string | undefined;
  let listMeta: MetadataBuilder | undefined;
  let done = false;

  async function* batches(): AsyncGenerator<ParsedListItem[]> {
    const options = {
      bom: true,
      skip_empty_lines: true,
      record_delimiter: ['\r\n', '\n'],
      max_record_size: limits.maxRecordChars,
      // a failing record then leaves the records before it readable, so the header is never lost to an error in the next rows
      autoDestroy: false,
    };
    // the typings do not know the stream options csv-parse hands to its Transform
    // a header has item.href, list.name and up to maxKeys metadata columns of each kind
    const parser = new MarkingParser(options as Options, 2 + 2 * limits.maxKeys);
    let failure: unknown;
    const onError = (err: unknown) => {
      failure ??= err;
    };
    parser.on('error', onError);
    const onSourceError = (err: Error) => parser.destroy(err);
    source.on('error', onSourceError);
    source.pipe(parser);
    // wakes the loop below when the parser has records, has ended or failed (only ever awaited right after read() found nothing)
    let wake: (() => void) | undefined;
    const onEvent = () => wake?.();
    parser.on('readable', onEvent);
    parser.on('end', onEvent);
    parser.on('error', onEvent);
    parser.on('close', onEvent);
    let header: string[] | undefined;
    let columns: Column[] = [];
    let row = 0;
    let count = 0;
    const list = new MetadataBuilder(limits.maxKeys);
    try {
      // A bad row ends the batch: the items before it are handed over first, so
      // a consumer's own check of an earlier item (an href) still reports first.
      let rowError: unknown;
      for (;;) {
        const batch: ParsedListItem[] = [];
        let fields: Field[] | null;
        try {
          while ((fields = parser.read() as Field[] | null) !== null) {
            row++;
            if (!header) {
              // never marked
              header = fields as string[];
              columns = readHeader(header, limits);
              continue;
            }
            const item = readRow(fields, columns, header, row, list, limits);
            if (item.name !== undefined) {
              if (name !== undefined && name !== item.name) throw invalidCsv(`row ${row}: list.name differs from an earlier row`, { row, column: 'list.name' });
              name = item.name;
            }
            if (item.href === undefined) continue;
            if (++count > limits.maxItems) throw listTooLarge(limits.maxItems);
            batch.push({ href: item.href, metadata: item.metadata, at: { row } });
          }
        } catch (err) {
          rowError = err;
        }
        if (batch.length > 0) {
          yield batch;
          if (rowError !== undefined) throw rowError;
          // events may have fired while the consumer had the batch: read again before waiting
          continue;
        }
        if (rowError !== undefined) throw rowError;
        if (failure !== undefined) throw failure instanceof CsvError ? fromCsvError(failure, header ?? [], limits) : failure;
        if (parser.readableEnded) break;
        if (parser.destroyed) throw new Error('the CSV parser stopped before the end of the input');
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
      if (!header) throw invalidCsv('row 1: the body is empty; a header row with item.href is required', { row: 1, column: 'item.href' });
      listMeta = list;
      done = true;
    } finally {
      source.off('error', onSourceError);
      source.unpipe(parser);
      parser.off('readable', onEvent);
      parser.off('end', onEvent);
      parser.off('error', onEvent);
      parser.off('close', onEvent);
      parser.destroy();
    }
  }

  return {
    items: fromBatches(batches()),
    header: () => (done ? { ...(name !== undefined ? { name } : {}), metadata: listMeta!.root } : headerNotReady()),
  };
}

/** One data row: list values go into `list` (first value wins, a different later one is a 400), item values into the item. */
function readRow(fields: Field[], columns: Column[], header: string[], row: number, list: MetadataBuilder, limits: ListLimits) {
  let name: string | undefined;
  let href: string | undefined;
  const item = new MetadataBuilder(limits.maxKeys);
  let itemColumn: string | undefined;
  for (let i = 0; i < columns.length; i++) {
    const value = valueOf(fields[i]);
    if (value === undefined) continue;
    const column = columns[i]!;
    const key = header[i]!;
    if (column.kind === 'list.name') {
      name = value;
    } else if (column.kind === 'item.href') {
      href = value;
    } else if (column.kind === 'list.metadata') {
      const res = list.set(column.path, value);
      if (res === 'conflict') throw invalidCsv(`row ${row}, column ${key}: the value conflicts with an earlier row or column`, { row, column: key });
    } else {
      itemColumn ??= key;
      if (item.set(column.path, value) === 'conflict') throw invalidCsv(`row ${row}, column ${key}: the key conflicts with another column`, { row, column: key });
    }
  }
  if (href === '' || (href === undefined && itemColumn !== undefined)) {
    throw invalidCsv(`row ${row}: item.href is empty`, { row, column: 'item.href' });
  }
  return { name, href, metadata: item.root };
}

/**
 * Writes a list as CSV: one pass over the items collects the columns, a
 * second writes the rows (CRLF, minimal quoting, `""` for an empty string).
 * Memory holds the set of keys, never the rows. List values stand on the first row.
 */
export async function writeCsv(list: ListSource): Promise<Readable> {
  const listLeaves = [...flatten(list.metadata)];
  const itemPaths = new Map<string, number>();
  for await (const item of list.items()) {
    for (const [path] of flatten(item.metadata)) {
      const key = joinPath(path);
      if (!itemPaths.has(key)) itemPaths.set(key, itemPaths.size);
    }
  }
  const hasName = list.name !== undefined;
  const header = [
    ...(hasName ? ['list.name'] : []),
    ...listLeaves.map(([path]) => LIST_META + joinPath(path)),
    'item.href',
    ...[...itemPaths.keys()].map((k) => ITEM_META + k),
  ];
  const itemStart = header.length - itemPaths.size;
  // quote_record_delimiter: with record_delimiter set, csv-stringify would otherwise leave a lone \n or \r unquoted
  const line = (fields: (string | null)[]) => stringify([fields], { record_delimiter: 'windows', quote_record_delimiter: true, quoted_match: /^$/ });
  const listCells = () => [...(hasName ? [list.name!] : []), ...listLeaves.map(([, v]) => v)];

  async function* rows(): AsyncGenerator<string> {
    yield line(header);
    let first = true;
    for await (const item of list.items()) {
      const fields: (string | null)[] = new Array<string | null>(header.length).fill(null);
      if (first) listCells().forEach((v, i) => (fields[i] = v));
      first = false;
      fields[itemStart - 1] = item.href;
      for (const [path, value] of flatten(item.metadata)) {
        const at = itemPaths.get(joinPath(path));
        // an item that gained a key between the passes: the column does not exist, so it cannot be written
        if (at !== undefined) fields[itemStart + at] = value;
      }
      yield line(fields);
    }
    if (first && itemStart > 1) yield line([...listCells(), null]);
  }
  return Readable.from(rows());
}

