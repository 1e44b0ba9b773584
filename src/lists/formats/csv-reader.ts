import { StringDecoder } from 'node:string_decoder';

/**
 * The CSV dialect of list bodies (docs/formats.md), read by hand: `,`
 * between fields, `"` quoting with `""` for a quote, records ended by CRLF
 * or LF, blank lines skipped, an optional BOM. It answers as csv-parse did
 * with the options the lists used (`bom`, `skip_empty_lines`,
 * `record_delimiter: ['\r\n', '\n']`, `max_record_size`, strict quotes and
 * field counts): the same records, the same error codes with the same record
 * count, field index and line number (`test/lists/formats/csv-reader.test.ts`
 * holds the two to the same answers on generated inputs), at a fraction of
 * its CPU: csv-parse walks every byte through a general state machine and
 * copies it into a field buffer, this scans decoded text and slices fields.
 *
 * Its quirks are kept on purpose, so no body reads differently:
 * - a record's size limit counts the UTF-8 bytes of the field being read
 *   plus the characters of the fields before it, checked before each byte
 *   of field content (so a record may end one byte past the limit);
 * - the line number counts every CR and LF except the LF of a CRLF that ends
 *   a record, up to (not including) the character where the error is found;
 * - a closing quote may be followed by a NUL, which then continues the field.
 * Known differences: a byte sequence that is not UTF-8 decodes to U+FFFD as
 * in csv-parse but counts as that character's 3 bytes against the record
 * size (csv-parse counted the 1 to 3 bytes it replaced), so such a record
 * may be refused a few bytes earlier; a UTF-16LE BOM switches to UTF-16LE
 * text as csv-parse did, without its byte-level oddities in that encoding
 * (delimiters matched at odd offsets).
 */

/** A quoted empty field (`""`), which the API keeps apart from an unquoted empty one (no value). */
export const QUOTED_EMPTY = Symbol('quoted empty');
export type Field = string | typeof QUOTED_EMPTY;

export type CsvErrorCode =
  | 'CSV_QUOTE_NOT_CLOSED'
  | 'CSV_INVALID_CLOSING_QUOTE'
  | 'INVALID_OPENING_QUOTE'
  | 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH'
  | 'CSV_MAX_RECORD_SIZE';

/** Where a body stops being CSV: `records` read before it (the header included), the field's index in its record, the line. */
export class CsvSyntaxError extends Error {
  constructor(readonly code: CsvErrorCode, readonly records: number, readonly column: number, readonly lines: number) {
    super(`${code} after ${records} records, field ${column}, line ${lines}`);
  }
}

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

/** Characters from `a` up to `b` that are CR or LF (csv-parse's line counter). */
function lineBreaks(s: string, a: number, b: number): number {
  let n = 0;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c === LF || c === CR) n++;
  }
  return n;
}

/** The end of unquoted text read so far: a CR at the very end may be the start of a CRLF, not text. */
const pendingEnd = (s: string, n: number) => (s.charCodeAt(n - 1) === CR ? n - 1 : n);

/** What reading one record from the text found. */
const NEED_MORE = -1;

export class CsvReader {
  private decoder: StringDecoder | undefined;
  /** Bytes held back until the BOM can be told (fewer than 3 at the start). */
  private head: Buffer | undefined = Buffer.alloc(0);
  /** Text not yet read: it starts at a record (or a blank line). */
  private text = '';
  /** csv-parse's line counter at the start of `text`. */
  private lines = 1;
  private bytesPerUnit = 0;
  /** Records read so far, the header included. */
  records = 0;
  private expected = -1;

  /** `maxRecordBytes`: csv-parse's `max_record_size` (0: no limit). */
  constructor(private readonly maxRecordBytes: number) {}

  /** Reads a chunk; the records it completed go to `out`. Throws `CsvSyntaxError` once a record is bad, after pushing those before it. */
  push(chunk: Buffer, out: Field[][]): void {
    const text = this.decode(chunk);
    if (text !== undefined) this.read(text, false, out);
  }

  /** The input ended: the last record, or the error that ends it. */
  end(out: Field[][]): void {
    const text = this.decode(undefined) ?? '';
    this.read(text + (this.decoder?.end() ?? ''), true, out);
  }

  private decode(chunk: Buffer | undefined): string | undefined {
    if (this.head !== undefined) {
      const bytes = chunk ? Buffer.concat([this.head, chunk]) : this.head;
      if (bytes.length < 3 && chunk) {
        this.head = bytes;
        return undefined;
      }
      this.head = undefined;
      let start = 0;
      if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) start = 3;
      else if (bytes[0] === 0xff && bytes[1] === 0xfe) start = 2;
      const utf16 = start === 2;
      this.decoder = new StringDecoder(utf16 ? 'utf16le' : 'utf8');
      this.bytesPerUnit = utf16 ? 2 : 0;
      return this.decoder.write(bytes.subarray(start));
    }
    return chunk ? this.decoder!.write(chunk) : undefined;
  }

  /** Bytes of field content `s[a, b)` as csv-parse counted them. */
  private bytes(s: string, a: number, b: number): number {
    return this.bytesPerUnit ? (b - a) * this.bytesPerUnit : Buffer.byteLength(s.slice(a, b), 'utf8');
  }

  private read(chunk: string, final: boolean, out: Field[][]): void {
    const s = this.text.length > 0 ? this.text + chunk : chunk;
    const n = s.length;
    let p = 0;
    try {
      while (p < n) {
        const c = s.charCodeAt(p);
        // a blank line (nothing read of a record yet): skipped, one line counted
        if (c === LF) {
          p++;
          this.lines++;
          continue;
        }
        if (c === CR) {
          if (p + 1 >= n && !final) break;
          if (s.charCodeAt(p + 1) === LF) {
            p += 2;
            this.lines++;
            continue;
          }
        }
        const next = this.record(s, p, n, final, out);
        if (next === NEED_MORE) break;
        p = next;
      }
    } finally {
      this.text = p < n ? s.slice(p) : '';
    }
  }

  /**
   * One record from `start` (not a blank line): pushed to `out`, returning
   * where the next one starts, or NEED_MORE when the text ends first and more
   * may come. Throws at the first byte csv-parse would have refused.
   */
  private record(s: string, start: number, n: number, final: boolean, out: Field[][]): number {
    const fields: Field[] = [];
    // csv-parse's record length: characters of the fields already read
    let before = 0;
    let i = start;
    for (;;) {
      // one field from i
      const from = i;
      let value: string;
      let quoted = false;
      let j = i;
      if (j < n && s.charCodeAt(j) === QUOTE) {
        quoted = true;
        let part = '';
        let k = j + 1;
        for (;;) {
          const q = s.indexOf('"', k);
          if (q < 0) {
            this.checkSize(s, start, fields.length, before, from, n, true);
            if (!final) return NEED_MORE;
            return this.fail('CSV_QUOTE_NOT_CLOSED', s, start, fields.length, n - 1);
          }
          if (q + 1 >= n && !final) {
            this.checkSize(s, start, fields.length, before, from, q, true);
            return NEED_MORE;
          }
          const after = s.charCodeAt(q + 1);
          if (after === QUOTE) {
            part += s.slice(k, q + 1);
            k = q + 2;
            continue;
          }
          if (after === CR && q + 2 >= n && !final) {
            this.checkSize(s, start, fields.length, before, from, q, true);
            return NEED_MORE;
          }
          if (!(q + 1 >= n || after === 0 || after === COMMA || after === LF || (after === CR && s.charCodeAt(q + 2) === LF))) {
            this.checkSize(s, start, fields.length, before, from, q, true);
            return this.fail('CSV_INVALID_CLOSING_QUOTE', s, start, fields.length, q);
          }
          value = k === j + 1 ? s.slice(k, q) : part + s.slice(k, q);
          j = q + 1;
          break;
        }
        // a NUL after the closing quote continues the field as unquoted text
        if (j < n && s.charCodeAt(j) === 0) {
          const rest = j;
          j = this.unquoted(s, j, n, final);
          if (j === NEED_MORE) {
            this.checkSize(s, start, fields.length, before, from, pendingEnd(s, n), true);
            return NEED_MORE;
          }
          if (j < n && s.charCodeAt(j) === QUOTE) {
            this.checkSize(s, start, fields.length, before, from, j, true);
            return this.fail('INVALID_OPENING_QUOTE', s, start, fields.length, j);
          }
          value += s.slice(rest, j);
        }
      } else {
        j = this.unquoted(s, j, n, final);
        if (j === NEED_MORE) {
          this.checkSize(s, start, fields.length, before, from, pendingEnd(s, n), false);
          return NEED_MORE;
        }
        if (j < n && s.charCodeAt(j) === QUOTE) {
          // a quote after content: csv-parse refuses it (a quote at the start opened the field above)
          this.checkSize(s, start, fields.length, before, from, j, false);
          return this.fail('INVALID_OPENING_QUOTE', s, start, fields.length, j);
        }
        value = s.slice(from, j);
      }
      this.checkSize(s, start, fields.length, before, from, j, quoted);
      fields.push(quoted && value.length === 0 ? QUOTED_EMPTY : value);
      before += value.length;
      // j: a comma, a record's end (LF, CRLF) or the end of the text (final)
      if (j < n && s.charCodeAt(j) === COMMA) {
        i = j + 1;
        continue;
      }
      const ends = j >= n ? n - 1 : j;
      if (this.expected < 0) this.expected = fields.length;
      else if (fields.length !== this.expected) {
        throw new CsvSyntaxError('CSV_RECORD_INCONSISTENT_FIELDS_LENGTH', this.records, fields.length, this.lines + lineBreaks(s, start, ends));
      }
      this.records++;
      out.push(fields);
      if (j >= n) {
        this.lines += lineBreaks(s, start, n);
        return n;
      }
      const next = s.charCodeAt(j) === CR ? j + 2 : j + 1;
      this.lines += lineBreaks(s, start, j) + 1;
      return next;
    }
  }

  private fail(code: CsvErrorCode, s: string, start: number, column: number, at: number): never {
    throw new CsvSyntaxError(code, this.records, column, this.lines + lineBreaks(s, start, at));
  }

  /**
   * The size check csv-parse makes before each byte of field content, for
   * the field whose raw text is `s[from, to)` (`column` fields of `before`
   * characters before it in the record starting at `start`): fails at the
   * first byte where the record so far exceeds the limit.
   */
  private checkSize(s: string, start: number, column: number, before: number, from: number, to: number, quoted: boolean): void {
    const max = this.maxRecordBytes;
    // cheap bound first: at most 3 bytes per UTF-16 unit
    if (max === 0 || before + (to - from) * 3 <= max + 1) return;
    const content = quoted ? this.contentBytes(s, from, to) : this.bytes(s, from, to);
    if (content === 0 || before + content - 1 <= max) return;
    // the byte where it fails: the (max - before + 1)th of the field's content
    this.fail('CSV_MAX_RECORD_SIZE', s, start, column, this.rawAt(s, from, to, quoted, Math.max(0, max - before + 1)));
  }

  /** Content bytes of a quoted field's raw text from its opening quote: `""` is one byte, the quotes around none. */
  private contentBytes(s: string, from: number, to: number): number {
    let bytes = 0;
    let k = from + 1;
    while (k < to) {
      const q = s.indexOf('"', k);
      const end = q < 0 || q >= to ? to : q;
      bytes += this.bytes(s, k, end);
      if (end === to) break;
      // an escaped quote is one byte; a closing quote ends the quoted part (a NUL continues the field)
      if (s.charCodeAt(q + 1) === QUOTE) {
        bytes += 1;
        k = q + 2;
      } else {
        bytes += this.bytes(s, q + 1, to);
        break;
      }
    }
    return bytes;
  }

  /** The raw position of the field's content byte number `target` (0-based). */
  private rawAt(s: string, from: number, to: number, quoted: boolean, target: number): number {
    let bytes = 0;
    let k = quoted ? from + 1 : from;
    let inQuotes = quoted;
    while (k < to) {
      const c = s.charCodeAt(k);
      if (inQuotes && c === QUOTE) {
        if (s.charCodeAt(k + 1) === QUOTE) k++;
        else {
          inQuotes = false;
          k++;
          continue;
        }
      }
      const pair = c >= 0xd800 && c <= 0xdbff && k + 1 < to;
      const width = this.bytesPerUnit ? this.bytesPerUnit * (pair ? 2 : 1) : c < 0x80 ? 1 : c < 0x800 ? 2 : pair ? 4 : 3;
      if (bytes + width > target) return k;
      bytes += width;
      k += pair ? 2 : 1;
    }
    return to;
  }

  /**
   * Unquoted field text from `i`: the position of the comma, LF, CRLF or
   * quote that ends it, `n` at the end of the input, NEED_MORE when the text
   * ends first and more may come. A CR not followed by LF is text.
   */
  private unquoted(s: string, i: number, n: number, final: boolean): number {
    for (let j = i; j < n; j++) {
      const c = s.charCodeAt(j);
      if (c === COMMA || c === LF || c === QUOTE) return j;
      if (c === CR) {
        if (j + 1 >= n) return final ? n : NEED_MORE;
        if (s.charCodeAt(j + 1) === LF) return j;
      }
    }
    return final ? n : NEED_MORE;
  }
}
