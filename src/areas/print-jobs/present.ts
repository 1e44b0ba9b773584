import type { AppConfig } from '../../config/schema.js';
import { isFinalJobState, type JobState } from './job-states.js';
import { LISTED, type ListedJobRow, type PrintJobRow } from './print-job-store.js';
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
 * A page of the job listing written straight as JSON text, byte for byte what
 * `JSON.stringify` of `presentJob` (through `selectFields`) gives, from rows of
 * PostgreSQL text (LIST_COLUMNS in print-job-store.ts): numbers and ISO
 * timestamps go in as they come, strings through `JSON.stringify`, jsonb text
 * (`{"type": "api"}`) re-serialised compactly. Parsing 100 rows into values and
 * serialising them back was most of a listing's CPU (docs/benchmarks.md).
 */
export function jobListWriter(defaults: Retention) {
  const L = LISTED;
  const str = (v: string | null) => (v === null ? 'null' : JSON.stringify(v));
  const num = (v: string | null) => (v === null ? 'null' : v);
  const json = compactJson();
  const fields: [string, (r: ListedJobRow) => string][] = [
    ['id', (r) => r[L.id]!],
    ['status', (r) => str(r[L.status]!)],
    ['printer', (r) => str(r[L.printer]!)],
    ['user', (r) => str(r[L.creator]!)],
    ['owner', (r) => str(r[L.owner]!)],
    ['name', (r) => str(r[L.name]!)],
    ['fileName', (r) => str(r[L.fileName]!)],
    ['mimeType', (r) => str(r[L.mimeType]!)],
    ['size', (r) => num(r[L.size]!)],
    ['copies', (r) => num(r[L.copies]!)],
    ['priority', (r) => num(r[L.priority]!)],
    ['pages', (r) => num(r[L.pages]!)],
    ['checkin', (r) => json(r[L.checkin]!)],
    ['task', (r) => json(r[L.task]!)],
    ['flow', (r) => str(r[L.flow]!)],
    ['redirectedFrom', (r) => str(r[L.redirectedFrom]!)],
    ['message', (r) => str(r[L.message]!)],
    ['created', (r) => str(r[L.created]!)],
    ['updated', (r) => str(r[L.updated]!)],
    ['finished', (r) => str(r[L.finished]!)],
    ['keepTempfiles', (r) => r[L.keepTempfiles]!],
    ['stages', (r) => stagesJson(r[L.stages]!)],
    ['retention', (r) => retentionJson(r, defaults)],
    ['attempts', (r) => num(r[L.attempts]!)],
    ['nextAttempt', (r) => str(r[L.nextAttempt]!)],
  ];
  const byName = new Map(fields);
  const writerOf = (select: string[] | undefined) => {
    const chosen = select ? [...new Set(select)].filter((k) => byName.has(k)).map((k) => [k, byName.get(k)!] as const) : fields;
    const parts = chosen.map(([k, write], i) => [`${i === 0 ? '{' : ','}"${k}":`, write] as const);
    return (r: ListedJobRow) => {
      let out = '';
      for (const [prefix, write] of parts) out += prefix + write(r);
      return parts.length === 0 ? '{}' : `${out}}`;
    };
  };
  const all = writerOf(undefined);
  return (rows: ListedJobRow[], select: string[] | undefined, total?: number): string => {
    const row = select ? writerOf(select) : all;
    let list = '[';
    for (let i = 0; i < rows.length; i++) list += (i === 0 ? '' : ',') + row(rows[i]!);
    list += ']';
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

/** `retention` of presentJob from listed text. */
function retentionJson(r: ListedJobRow, defaults: Retention): string {
  const own = r[LISTED.retentionSec]!;
  const status = r[LISTED.status] as JobState;
  const keepSec = retentionOf({ status, retention_sec: own === null ? null : Number(own) }, defaults);
  const since = isFinalJobState(status) ? r[LISTED.finished]! : status === 'paused' ? r[LISTED.updated]! : null;
  const deleteAfter = keepSec !== null && since ? `"${new Date(Date.parse(since) + keepSec * 1000).toISOString()}"` : 'null';
  return `{"seconds":${keepSec === null ? 'null' : JSON.stringify(keepSec)},"custom":${own !== null},"deleteAfter":${deleteAfter}}`;
}

export const presentLog = (r: PrintLogRow) => ({ at: iso(r.at)!, level: r.level, text: r.text, ...(r.job_id !== null ? { job: Number(r.job_id) } : {}) });

/** The log as text, one line per entry (`logfile`). */
export const logText = (rows: PrintLogRow[]) => rows.map((r) => `${iso(r.at)} ${r.level.toUpperCase().padEnd(7)} ${r.text.replace(/[\r\n]+/g, ' ')}\n`).join('');
