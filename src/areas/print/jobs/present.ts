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
 * (`2026-11-23 04:00:00.5` as `2026-11-23T04:00:00.500Z`). The page is split at
 * its marks, each marked piece rewritten, the pieces joined; a page without
 * marks goes out as it came. Rewriting an ASCII page as bytes in place instead
 * wrote the bench page in 52 µs against 83 µs here, about 3 % of the API's
 * 1 ms of CPU per request, which `npm run bench:print-listing` does not
 * resolve: service / bare Koa median 0.26 with this writer, 0.22 with the
 * in-place one, ten alternating runs each (docs/benchmarks.md#print-listing).
 */
export function jobListWriter() {
  const json = compactJson();
  const expand = (page: string): string => {
    const parts = page.split(LISTING_MARK);
    for (let i = 1; i < parts.length; i += 2) {
      const part = parts[i]!;
      const kind = part.charCodeAt(0);
      parts[i] = kind === 116 /* t */ ? isoOfText(part) : kind === 115 /* s */ ? stagesJson(part.slice(1)) : json(part.slice(1));
    }
    return parts.join('');
  };
  return (page: string, total?: number): string => {
    const list = page.includes(LISTING_MARK) ? expand(page) : page;
    return total === undefined ? list : `{"results":${list},"totalCount":${total}}`;
  };
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
