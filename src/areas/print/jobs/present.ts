import type { AppConfig } from '../../../config/schema.js';
import { isFinalJobState } from './job-states.js';
import type { PrintLogRow } from './store/job-reads.js';
import type { PrintJobRow } from './store/job-row.js';
import { LISTING_MARK } from './store/listing.js';

/** Dates as ISO text. */
const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export type Retention = AppConfig['print']['retention'];

/** Seconds the job is kept after its final (or paused) state: its own, else the default for the state. */
export function retentionOf(row: Pick<PrintJobRow, 'status' | 'retention_sec'>, defaults: Retention): number | null {
  if (row.retention_sec !== null) return row.retention_sec;
  return Object.hasOwn(defaults, row.status) ? defaults[row.status as keyof Retention] : null;
}

/** A job as the API shows it (DESIGN.md section 7). */
export function presentJob(row: PrintJobRow, defaults: Retention) {
  const keepSec = retentionOf(row, defaults);
  const since = isFinalJobState(row.status) ? row.finished : row.status === 'paused' ? row.updated : null;
  return {
    id: Number(row.id),
    status: row.status,
    printer: row.printer,
    user: row.creator,
    owner: row.owner,
    name: row.name,
    fileName: row.file_name,
    mimeType: row.mime_type,
    size: Number(row.size),
    copies: row.copies,
    priority: row.priority,
    pages: row.pages,
    checkin: row.checkin,
    task: row.task,
    flow: row.flow,
    redirectedFrom: row.redirected_from,
    message: row.message,
    created: iso(row.created)!,
    updated: iso(row.updated)!,
    finished: iso(row.finished),
    keepTempfiles: row.keep_tempfiles,
    stages: row.stages.map((s) => ({ stage: s.stage, size: s.size, mimeType: s.mimeType, created: s.created })),
    retention: {
      seconds: keepSec,
      custom: row.retention_sec !== null,
      deleteAfter: keepSec !== null && since ? new Date(since.getTime() + keepSec * 1000).toISOString() : null,
    },
    attempts: row.attempts,
    nextAttempt: iso(row.next_attempt_at),
  };
}

export type PresentedJob = ReturnType<typeof presentJob>;

/** `$select`: only the named top-level fields. */
export function selectFields<T extends Record<string, unknown>>(obj: T, select: string[] | undefined): Partial<T> {
  if (!select) return obj;
  const out: Partial<T> = {};
  for (const k of select) if (Object.hasOwn(obj, k)) out[k as keyof T] = obj[k as keyof T];
  return out;
}

/**
 * The job listing's body from the page `listJobs` returns (jobs/store/listing.ts),
 * byte for byte what `JSON.stringify` of `presentJob` (through `selectFields`)
 * gives: PostgreSQL built the JSON text of every field but the jsonb ones
 * (checkin, task, stages) and the timestamps, whose text comes between
 * LISTING_MARKs after a letter: `c` to write compactly (`{"type": "api"}` as
 * `{"type":"api"}`), `s` for the presented stages, `t` for a timestamp's text
 * (`2026-11-23 04:00:00.5` as `2026-11-23T04:00:00.500Z`). A page without marks
 * goes out as it came.
 *
 * A page of ASCII text (the usual case) is rewritten as UTF-8 bytes in place
 * (expandAscii) and answered as a Buffer: splitting the page at its ~500 marks
 * and joining the pieces again cost about twice as much (docs/benchmarks.md),
 * and the socket write need not encode the text again. Any other page, and the
 * `$inlinecount` envelope, take the text path (expand).
 */
export function jobListWriter() {
  const json = compactJson();
  // a `c` piece's text (`c{"type": "api"}`) -> its compact bytes, for expandAscii; bounded like compactJson
  const compactBytes = new Map<string, Buffer>();
  const expand = (page: string): string => {
    const parts = page.split(LISTING_MARK);
    for (let i = 1; i < parts.length; i += 2) {
      const part = parts[i]!;
      const kind = part.charCodeAt(0);
      parts[i] = kind === 116 /* t */ ? isoOfText(part) : kind === 115 /* s */ ? stagesJson(part.slice(1)) : json(part.slice(1));
    }
    return parts.join('');
  };
  return (page: string, total?: number): string | Buffer => {
    if (!page.includes(LISTING_MARK)) return total === undefined ? page : `{"results":${page},"totalCount":${total}}`;
    if (total === undefined) {
      const bytes = expandAscii(page, json, compactBytes);
      if (bytes) return bytes;
    }
    const list = expand(page);
    return total === undefined ? list : `{"results":${list},"totalCount":${total}}`;
  };
}

/**
 * expand's result as UTF-8 bytes for a page that is all ASCII (then its string
 * indices are its byte offsets): the page's bytes, each marked piece rewritten
 * where it stood and the text between moved down over the marks. A rewritten
 * piece is mostly shorter than its marked text (`\x01t…\x01` of 29 bytes to a
 * 24-byte ISO text, `{"type": "api"}` without its spaces and marks); where one
 * would overtake the text not yet read (timestamps without a fraction grow by
 * two bytes), or the page is not ASCII, undefined: the caller takes the text path.
 */
function expandAscii(page: string, json: (text: string) => string, compact: Map<string, Buffer>): Buffer | undefined {
  const n = page.length;
  // ASCII (every character one UTF-8 byte) is then its Latin-1 bytes, copied rather than encoded
  if (Buffer.byteLength(page, 'utf8') !== n) return undefined;
  const buf = Buffer.from(page, 'latin1');
  let w = 0; // next byte written
  let r = 0; // next byte of the page not yet read
  for (let i = page.indexOf(LISTING_MARK); i !== -1; i = page.indexOf(LISTING_MARK, r)) {
    const j = page.indexOf(LISTING_MARK, i + 1);
    if (j === -1) return undefined;
    if (w !== r) buf.copyWithin(w, r, i);
    w += i - r;
    r = j + 1;
    const kind = page.charCodeAt(i + 1);
    const a = i + 2;
    const len = j - a;
    if (kind === 116 /* t */ && (len === 19 || (len >= 21 && len <= 26 && page.charCodeAt(a + 19) === 46)) && page.charCodeAt(a + 10) === 32) {
      // `YYYY-MM-DD HH:MI:SS[.f…]` as `YYYY-MM-DDTHH:MI:SS.fffZ` (isoOfText's fast path): moved down (w < a, as
      // memmove) up to the third digit of the fraction, a `T` for the space, zeros for missing digits, `Z`
      if (w + 24 > r) return undefined;
      buf.copyWithin(w, a, len > 23 ? a + 23 : j);
      buf[w + 10] = 84; // T
      if (len < 23) {
        if (len === 19) buf[w + 19] = 46; // .
        for (let k = len === 19 ? 20 : len; k < 23; k++) buf[w + k] = 48;
      }
      buf[w + 23] = 90; // Z
      w += 24;
      continue;
    }
    const piece = page.slice(i + 1, j);
    let bytes = kind === 99 /* c */ ? compact.get(piece) : undefined;
    if (bytes === undefined) {
      const out = kind === 116 ? isoOfText(piece) : kind === 115 ? stagesJson(piece.slice(1)) : json(piece.slice(1));
      bytes = Buffer.from(out, 'utf8');
      if (bytes.length !== out.length) return undefined;
      if (kind === 99) {
        if (compact.size >= 1000) compact.clear();
        compact.set(piece, bytes);
      }
    }
    if (w + bytes.length > r) return undefined;
    buf.set(bytes, w);
    w += bytes.length;
  }
  if (w !== r) buf.copyWithin(w, r, n);
  w += n - r;
  return w === n ? buf : buf.subarray(0, w);
}

/** jsonb text as `JSON.stringify(JSON.parse(text))`; the few distinct values (checkin, task) are remembered, bounded. */
function compactJson() {
  const seen = new Map<string, string>();
  return (text: string): string => {
    let out = seen.get(text);
    if (out === undefined) {
      out = JSON.stringify(JSON.parse(text)) as string;
      if (seen.size >= 1000) seen.clear();
      seen.set(text, out);
    }
    return out;
  };
}

/**
 * `t` and a UTC timestamp's PostgreSQL text (`YYYY-MM-DD HH:MI:SS`, then `.` and
 * 1–6 digits unless the fraction is 0) as `Date.toISOString()` writes the Date
 * the driver parses from it: milliseconds truncated, `Z`. Anything else (years
 * past 9999, BC) goes through a Date.
 */
function isoOfText(part: string): string {
  const n = part.length;
  if (n === 20 && part.charCodeAt(11) === 32) return `${part.slice(1, 11)}T${part.slice(12)}.000Z`;
  if (n >= 22 && n <= 27 && part.charCodeAt(11) === 32 && part.charCodeAt(20) === 46) {
    const ms = part.slice(21, 24);
    return `${part.slice(1, 11)}T${part.slice(12, 20)}.${ms.length === 3 ? ms : ms.padEnd(3, '0')}Z`;
  }
  return new Date(`${part.slice(1).replace(' ', 'T')}Z`).toISOString();
}

const stagesJson = (text: string): string => text === '[]' ? text
  : JSON.stringify((JSON.parse(text) as JobStageJson[]).map((s) => ({ stage: s.stage, size: s.size, mimeType: s.mimeType, created: s.created })));
interface JobStageJson { stage: string; size: number; mimeType: string; created: string }

export const presentLog = (r: PrintLogRow) => ({ at: iso(r.at)!, level: r.level, text: r.text, ...(r.job_id !== null ? { job: Number(r.job_id) } : {}) });

/** The log as text, one line per entry (`logfile`). */
export const logText = (rows: PrintLogRow[]) => rows.map((r) => `${iso(r.at)} ${r.level.toUpperCase().padEnd(7)} ${r.text.replace(/[\r\n]+/g, ' ')}\n`).join('');
