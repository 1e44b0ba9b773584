import type { DocRef } from '../doc-href.js';
import type { Metadata } from '../../../../formats/list-document.js';
import { writeItemId } from '../item-id.js';

/**
 * The rows of `list_items` in PostgreSQL's binary COPY format, for
 * `insertItemsFrom` (insert-items.ts), in the column order of the list
 * store's `copyItems` statement. Shared by the main thread and the CSV
 * import thread (csv-thread-entry.ts), which encodes a CSV body's rows here
 * and hands the finished payloads over.
 */

// signature, flags (no OIDs), header extension length
const COPY_HEADER = Buffer.concat([Buffer.from('PGCOPY\n\xff\r\n\0', 'latin1'), Buffer.alloc(8)]);
const COPY_FIELDS = 7;
const JSONB_VERSION = 1;

const HEX = new Int8Array(128).fill(-1);
for (let i = 0; i < 16; i++) {
  HEX['0123456789abcdef'.charCodeAt(i)] = i;
  HEX['0123456789ABCDEF'.charCodeAt(i)] = i;
}

/** A uuid's text (8-4-4-4-12 hex digits, as `docRef` and PostgreSQL hand them over) as 16 bytes at `o`. */
function writeUuid(uuid: string, b: Buffer, o: number): number {
  if (uuid.length !== 36) throw new Error(`not a uuid: ${uuid}`);
  let i = 0;
  for (let k = 0; k < 16; k++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) i++;
    const hi = HEX[uuid.charCodeAt(i)] ?? -1;
    const lo = HEX[uuid.charCodeAt(i + 1)] ?? -1;
    if (hi < 0 || lo < 0) throw new Error(`not a uuid: ${uuid}`);
    b[o + k] = (hi << 4) | lo;
    i += 2;
  }
  return o + 16;
}

/** True when `s` can be written as is between JSON quotes: no `"`, `\\`, control character or UTF-16 surrogate (JSON.stringify escapes those). */
function plainJson(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 34 || c === 92 || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

const isPlainObject = (v: unknown): v is Metadata => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && typeof (v as { toJSON?: unknown }).toJSON !== 'function';
};

/**
 * One COPY's data in PostgreSQL's binary format, written straight into a
 * growing buffer a row at a time: the header, rows of seven fields (id as
 * a fresh UUIDv7, lid, position, href, doc_sid, doc_uuid, metadata as
 * jsonb version 1 and its JSON text), the trailer at `take()`. Text is
 * written by a JS loop while it is ASCII (a `Buffer#write` crosses into C++,
 * a visible share of a short field's cost), and the metadata's JSON text is
 * written straight from the object: the same bytes as `JSON.stringify`
 * (keys in the same order; a string that needs escaping, and any value but
 * a string or a plain object, go through `JSON.stringify` itself), without
 * the intermediate string.
 */
export class CopyRows {
  private buf: Buffer = Buffer.allocUnsafe(64 * 1024);
  private inFlight: Buffer | undefined;
  private spare: Buffer | undefined;
  private length = 0;
  rows = 0;
  private readonly lid = Buffer.alloc(16);

  constructor(lid: string) {
    writeUuid(lid, this.lid, 0);
    this.start();
  }

  private start(): void {
    this.length = COPY_HEADER.copy(this.buf, 0);
    this.rows = 0;
  }

  private ensure(bytes: number): void {
    if (this.length + bytes <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + bytes));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  /** `value`'s UTF-8 bytes at `o` (room for 3 bytes per UTF-16 unit must be there); returns the offset after them. */
  private utf8(value: string, o: number): number {
    const b = this.buf;
    const n = value.length;
    let i = 0;
    for (; i < n; i++) {
      const c = value.charCodeAt(i);
      if (c >= 0x80) break;
      b[o + i] = c;
    }
    return i === n ? o + n : o + i + b.write(value.slice(i), o + i);
  }

  /** A text field: its UTF-8 bytes after their length. */
  private text(value: string, o: number): number {
    const end = this.utf8(value, o + 4);
    this.buf.writeInt32BE(end - o - 4, o);
    return end;
  }

  /** `value` as a JSON string at `this.length`. */
  private jsonString(value: string): void {
    if (!plainJson(value)) {
      this.jsonText(JSON.stringify(value));
      return;
    }
    this.ensure(value.length * 3 + 2);
    this.buf[this.length] = 34;
    const end = this.utf8(value, this.length + 1);
    this.buf[end] = 34;
    this.length = end + 1;
  }

  private jsonText(text: string): void {
    this.ensure(text.length * 3);
    this.length = this.utf8(text, this.length);
  }

  /** `meta` as `JSON.stringify(meta)` would write it, at `this.length`. */
  private jsonObject(meta: Metadata): void {
    this.ensure(1);
    this.buf[this.length++] = 123; // {
    let first = true;
    for (const key of Object.keys(meta)) {
      const value = meta[key];
      if (value === undefined || typeof value === 'function' || typeof value === 'symbol') continue;
      if (!first) {
        this.ensure(1);
        this.buf[this.length++] = 44; // ,
      }
      first = false;
      this.jsonString(key);
      this.ensure(1);
      this.buf[this.length++] = 58; // :
      if (typeof value === 'string') this.jsonString(value);
      else if (isPlainObject(value)) this.jsonObject(value);
      else this.jsonText(JSON.stringify(value) ?? 'null');
    }
    this.ensure(1);
    this.buf[this.length++] = 125; // }
  }

  add(position: number, href: string, doc: DocRef | null, metadata: Metadata): void {
    // at most 3 UTF-8 bytes per UTF-16 unit, so no write below is ever cut short
    this.ensure(2 + 20 + 20 + 8 + 4 + href.length * 3 + 4 + (doc ? doc.sid.length * 3 : 0) + 20 + 5);
    const b = this.buf;
    let o = b.writeInt16BE(COPY_FIELDS, this.length);
    o = b.writeInt32BE(16, o);
    o = writeItemId(b, o);
    o = b.writeInt32BE(16, o);
    o += this.lid.copy(b, o);
    o = b.writeInt32BE(4, o);
    o = b.writeInt32BE(position, o);
    o = this.text(href, o);
    if (doc) {
      o = this.text(doc.sid, o);
      o = b.writeInt32BE(16, o);
      o = writeUuid(doc.uuid, b, o);
    } else {
      o = b.writeInt32BE(-1, o);
      o = b.writeInt32BE(-1, o);
    }
    // the jsonb field: its length (known once written), the version, the JSON text (the buffer may grow meanwhile)
    const at = o;
    b[o + 4] = JSONB_VERSION;
    this.length = o + 5;
    if (isPlainObject(metadata)) this.jsonObject(metadata);
    else this.jsonText(JSON.stringify(metadata));
    this.buf.writeInt32BE(this.length - at - 4, at);
    this.rows++;
  }

  /**
   * The COPY data so far with its trailer; the next rows start a new one, in
   * the buffer given back by `sent()` when there is one (two buffers in turn,
   * not a new one per chunk).
   */
  take(): Buffer {
    this.ensure(2);
    this.length = this.buf.writeInt16BE(-1, this.length);
    const out = this.buf.subarray(0, this.length);
    this.inFlight = this.buf;
    this.buf = this.spare ?? Buffer.allocUnsafe(this.buf.length);
    this.spare = undefined;
    this.start();
    return out;
  }

  /** The COPY of the last `take()` has finished: its buffer may be written again. */
  sent(): void {
    this.spare = this.inFlight;
    this.inFlight = undefined;
  }
}

