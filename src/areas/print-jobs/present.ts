import type { AppConfig } from '../../config/schema.js';
import { isFinalJobState } from './job-states.js';
import type { ListedJobRow, ListedLayout, PrintJobRow } from './print-job-store.js';
import type { PrintLogRow } from './print-log.js';

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
 * A page of the job listing as JSON text, byte for byte what `JSON.stringify`
 * of `presentJob` (through `selectFields`) gives, from rows laid out by
 * `listJobs` (print-job-store.ts): runs of fields whose JSON text PostgreSQL
 * built go in as they come; checkin, task and stages (jsonb text such as
 * `{"type": "api"}`) are re-serialised compactly. Built as one array of pieces joined once
 * (a string grown by `+=` is a rope that the socket write must flatten).
 */
export function jobListWriter() {
  const json = compactJson();
  const writers: Record<string, (cols: ListedJobRow, at: number) => string> = {
    checkin: (c, at) => json(c[at]!),
    task: (c, at) => json(c[at]!),
    stages: (c, at) => stagesJson(c[at]!),
  };
  return (rows: ListedJobRow[], layout: ListedLayout, total?: number): string => {
    const out: string[] = ['['];
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i]!;
      out.push(i === 0 ? '{' : ',{');
      let at = 0;
      for (let k = 0; k < layout.length; k++) {
        const part = layout[k]!;
        if ('json' in part) {
          out.push(r[at++]!);
        } else {
          out.push(`${k === 0 ? '' : ','}"${part.field}":`, writers[part.field]!(r, at));
          at += part.columns;
        }
      }
      out.push('}');
    }
    out.push(']');
    const list = out.join('');
    return total === undefined ? list : `{"results":${list},"totalCount":${total}}`;
  };
}

/** jsonb text as `JSON.stringify(JSON.parse(text))`; the few distinct values (checkin, task) are remembered, bounded. */
function compactJson() {
  const seen = new Map<string, string>();
  return (text: string | null): string => {
    if (text === null) return 'null';
    let out = seen.get(text);
    if (out === undefined) {
      out = JSON.stringify(JSON.parse(text)) as string;
      if (seen.size >= 1000) seen.clear();
      seen.set(text, out);
    }
    return out;
  };
}

const stagesJson = (text: string): string => text === '[]' ? text
  : JSON.stringify((JSON.parse(text) as JobStageJson[]).map((s) => ({ stage: s.stage, size: s.size, mimeType: s.mimeType, created: s.created })));
interface JobStageJson { stage: string; size: number; mimeType: string; created: string }

export const presentLog = (r: PrintLogRow) => ({ at: iso(r.at)!, level: r.level, text: r.text, ...(r.job_id !== null ? { job: Number(r.job_id) } : {}) });

/** The log as text, one line per entry (`logfile`). */
export const logText = (rows: PrintLogRow[]) => rows.map((r) => `${iso(r.at)} ${r.level.toUpperCase().padEnd(7)} ${r.text.replace(/[\r\n]+/g, ' ')}\n`).join('');
