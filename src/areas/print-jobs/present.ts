import type { AppConfig } from '../../config/schema.js';
import { isFinalJobState } from './job-states.js';
import type { ListedJobRow, PrintJobRow } from './print-job-store.js';
import type { PrintLogRow } from './print-log.js';

/** Dates as ISO text; listings already bring the text (LIST_COLUMNS in print-job-store.ts). */
const iso = (d: Date | string | null) => (d === null ? null : typeof d === 'string' ? d : d.toISOString());

export type Retention = AppConfig['print']['retention'];

/** Seconds the job is kept after its final (or paused) state: its own, else the default for the state. */
export function retentionOf(row: Pick<PrintJobRow, 'status' | 'retention_sec'>, defaults: Retention): number | null {
  if (row.retention_sec !== null) return row.retention_sec;
  return Object.hasOwn(defaults, row.status) ? defaults[row.status as keyof Retention] : null;
}

/** A job as the API shows it (DESIGN.md section 7). */
export function presentJob(row: PrintJobRow | ListedJobRow, defaults: Retention) {
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
      deleteAfter: keepSec !== null && since ? new Date((typeof since === 'string' ? Date.parse(since) : since.getTime()) + keepSec * 1000).toISOString() : null,
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

export const presentLog = (r: PrintLogRow) => ({ at: iso(r.at)!, level: r.level, text: r.text, ...(r.job_id !== null ? { job: Number(r.job_id) } : {}) });

/** The log as text, one line per entry (`logfile`). */
export const logText = (rows: PrintLogRow[]) => rows.map((r) => `${iso(r.at)} ${r.level.toUpperCase().padEnd(7)} ${r.text.replace(/[\r\n]+/g, ' ')}\n`).join('');
