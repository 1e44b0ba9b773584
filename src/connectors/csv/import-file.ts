import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { AppError } from '../../errors/app-error.js';
import type { FailureReason } from '../intake-files/folder-moves.js';
import { fill, type PlaceholderValues } from '../intake-files/placeholders.js';
import { LeaseLostError } from '../lifecycle/lease.js';
import type { IntakeClaim, IntakePorts } from '../ports.js';
import type { SourceOptions } from './options.js';

/** A list format the task service parses. */
export type ListFormatName = 'csv' | 'rlist';

/** Everything one source's files are imported with. */
export interface ImportContext {
  sid: string;
  source: SourceOptions;
  /** The directory's absolute path, or the URL as shown (no credentials): the claims' `source`. */
  key: string;
  ports: IntakePorts;
  /** Recorded as the tasks' creator (`csv:<sid>`). */
  creator: string;
}

/** A file problem that no retry fixes (malformed list, refused by the task service, not a regular file). */
export class ImportRefused extends Error {
  constructor(readonly code: string, message: string, readonly where: { row?: number; column?: string | number; section?: string } = {}) {
    super(message);
  }
}

/** How completing a claim ended. */
export type ClaimResult =
  | { outcome: 'imported' }
  | { outcome: 'refused'; err: ImportRefused }
  /** The source changed while it was read: nothing of this read stays, the claim is released. */
  | { outcome: 'changed' };

/** A refusal by the task service (4xx): the file, not the moment, is the problem. */
const refusedByService = (err: unknown): err is AppError => err instanceof AppError && err.status >= 400 && err.status < 500;

/**
 * The service's refusal as a reason naming where in the file: the CSV
 * parser's `{ row, column }` (the header is row 1), the RList parser's
 * `{ section, key, line }` (its line as the row, its key as the column).
 */
export function refusalOf(err: AppError): ImportRefused {
  const d = (err.details ?? {}) as { row?: unknown; column?: unknown; line?: unknown; key?: unknown; section?: unknown };
  const row = typeof d.row === 'number' ? d.row : typeof d.line === 'number' ? d.line : undefined;
  const column = typeof d.column === 'string' || typeof d.column === 'number' ? d.column : typeof d.key === 'string' ? d.key : undefined;
  const section = typeof d.section === 'string' ? d.section : undefined;
  return new ImportRefused(err.code, `the task service refused it: ${err.message}`, {
    ...(row !== undefined ? { row } : {}), ...(column !== undefined ? { column } : {}), ...(section !== undefined ? { section } : {}),
  });
}

/** The reason written beside a file in error/ and into its claim. */
export function reasonOf(err: ImportRefused): FailureReason & { section?: string } {
  return { code: err.code, message: err.message, time: new Date().toISOString(), ...err.where };
}

/** The list format: configured, else by the name's extension, else by the content type (a URL's answer). */
export function formatOf(source: SourceOptions, name: string, contentType?: string): ListFormatName | undefined {
  if (source.format) return source.format;
  const ext = name.includes('.') ? name.slice(name.lastIndexOf('.') + 1).toLowerCase() : '';
  if (ext === 'csv') return 'csv';
  if (ext === 'rli' || ext === 'rlist') return 'rlist';
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  if (type === 'text/csv') return 'csv';
  if (type === 'application/rli') return 'rlist';
  return undefined;
}

export function placeholders(c: ImportContext, claim: Pick<IntakeClaim, 'name' | 'size' | 'sha256' | 'claimed'>): PlaceholderValues {
  const dot = claim.name.lastIndexOf('.');
  return {
    name: claim.name, stem: dot > 0 ? claim.name.slice(0, dot) : claim.name, ext: dot > 0 ? claim.name.slice(dot + 1) : '',
    size: claim.size, source: c.key, takenAt: claim.claimed.toISOString(), sha256: claim.sha256,
  };
}

/**
 * Completes a claim: the task is created from the body with the tid fixed
 * in the claim (one transaction: a malformed row leaves no task, no list, no
 * item; created already after a crash: nothing happens), the claim marked
 * `stored` (for this connector: the task exists), then the task started
 * when configured. `unchanged` says whether the source is still the claimed
 * file after it was read (a directory's file rewritten in place meanwhile).
 * Moving the source and finishing the claim are the caller's.
 */
export async function completeClaim(
  c: ImportContext, claim: IntakeClaim, format: ListFormatName, open: () => Readable, unchanged: () => Promise<boolean>,
): Promise<ClaimResult> {
  const { ports, source } = c;
  const t = source.task;
  const values = placeholders(c, claim);
  const name = fill(t.name, values);
  if (claim.state === 'claimed') {
    const body = open();
    try {
      const created = await ports.work.createTask({
        service: t.service, tid: claim.tid!, name, metadata: fill(t.metadata, values), list: { format, body }, creator: c.creator, owner: source.owner ?? null,
      });
      if (created && !(await unchanged())) {
        await ports.work.removeTask(t.service, claim.tid!, c.creator);
        await ports.claims.release(claim.id);
        return { outcome: 'changed' };
      }
    } catch (err) {
      if (refusedByService(err)) return { outcome: 'refused', err: refusalOf(err) };
      throw err;
    } finally {
      body.destroy();
    }
    await ports.claims.markStored(claim.id, name);
    ports.metrics.taken(Math.max(0, (Date.now() - (claim.mtimeMs ?? claim.claimed.getTime())) / 1000));
  }
  if (t.start) await ports.work.startTask(t.service, claim.tid!, c.creator);
  return { outcome: 'imported' };
}

/**
 * An unfinished claim whose source is gone or is another file now: `stored`
 * means the task exists (the crash came after it was created, perhaps after
 * the move to done/): it is started as configured and the claim finished;
 * `claimed` means nothing of it may stay: the task, if its transaction
 * committed just before the crash, is removed (it never started) and the
 * claim forgotten, so the file is imported afresh when it shows up again.
 */
export async function settleGone(c: ImportContext, claim: IntakeClaim): Promise<void> {
  const t = c.source.task;
  if (claim.state === 'stored') {
    if (t.start) await c.ports.work.startTask(t.service, claim.tid!, c.creator);
    await c.ports.claims.finish(claim.id, 'done', { note: 'the source was gone at resume (moved before a restart)' });
    return;
  }
  await c.ports.work.removeTask(t.service, claim.tid!, c.creator);
  await c.ports.claims.release(claim.id);
}

/**
 * A refused file's claim: its task removed in case it exists (it never
 * started), the claim finished as failed with the reason. The caller moves
 * the source after this, so a crash in between fails it again the same way.
 */
export async function failClaim(c: ImportContext, claim: IntakeClaim, reason: FailureReason): Promise<void> {
  // told first, under a uuid fixed by the claim: a crash before the claim is finished fails it again, and posts nothing new
  await notifyFailure(c, claim.name, reason, claim.id);
  await c.ports.work.removeTask(c.source.task.service, claim.tid!, c.creator);
  await c.ports.claims.finish(claim.id, 'failed', reason);
}

/** A uuid derived from `key` (sha256, shaped as a version 8 UUID): the same key, the same uuid. */
export function derivedUuid(key: string): string {
  const h = createHash('sha256').update(key).digest('hex');
  const variant = ((parseInt(h[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/**
 * Tells the source's `notify` user (else its `owner`; neither: nobody) that a
 * file failed, as an error message. With `claimId` the message's uuid is
 * derived from the claim, so telling twice (a retry after a crash) posts once.
 */
export async function notifyFailure(c: ImportContext, name: string, reason: FailureReason, claimId?: string): Promise<void> {
  const user = c.source.notify ?? c.source.owner;
  if (user === undefined) return;
  await c.ports.messages.post(user, {
    ...(claimId !== undefined ? { uuid: derivedUuid(`csv-import-failed\n${claimId}`) } : {}),
    type: 'error',
    text: `Import of "${name}" from ${c.key} failed: ${reason.message}`,
    source: `csv:${c.sid}`,
    metadata: { file: name, source: c.key, code: reason.code, ...(reason.row !== undefined ? { row: reason.row } : {}), ...(reason.column !== undefined ? { column: reason.column } : {}) },
  });
}

/** A lost lease ends the run: the caller stops importing at once. */
export const isLeaseLost = (err: unknown) => err instanceof LeaseLostError;
