import { randomUUID } from 'node:crypto';
import { constants, createReadStream, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fileThreads } from '../../threads/file-thread.js';
import { AppError } from '../../errors/app-error.js';
import { fill, type PlaceholderValues } from '../intake-files/placeholders.js';
import { DONE_DIR, moveInto, moveToError, removeSource, type FailureReason } from '../intake-files/folder-moves.js';
import { mediaTypeOfName } from '../intake-files/media-types.js';
import { entryHref } from '../facets/repository.js';
import { LeaseLostError } from '../lifecycle/lease.js';
import { ContentChangedError, type IntakeClaim, type IntakePorts } from '../ports.js';
import type { FolderOptions } from './options.js';

/** What a file looked like when it was found stable. */
export interface Seen {
  size: number;
  mtimeMs: number;
  ino: string;
}

/** How taking a file ended. */
export type TakeResult =
  | { outcome: 'taken'; claim: IntakeClaim }
  | { outcome: 'failed'; code: string }
  /** The file changed (or is not there yet): watch it again. */
  | { outcome: 'changed' }
  /** Gone before it was claimed (deleted or moved by somebody else): nothing to do. */
  | { outcome: 'vanished' }
  /** A passing problem (database, repository backend): try again later; nothing was lost. */
  | { outcome: 'retry'; err: unknown };

/** A file problem that no retry fixes: the file goes to error/. */
class FileRefused extends Error {
  constructor(readonly code: string, message: string) {
    super(message);
  }
}

export const identity = (st: Stats | { dev: number; ino: number }) => `${st.dev}:${st.ino}`;

const sameFile = (st: Pick<Stats, 'size' | 'mtimeMs' | 'dev' | 'ino'>, seen: Seen) => st.size === seen.size && st.mtimeMs === seen.mtimeMs && identity(st) === seen.ino;

/** A refusal by the service we store into or create tasks in (4xx): the file, not the moment, is the problem. */
const refusedByService = (err: unknown): err is AppError => err instanceof AppError && err.status >= 400 && err.status < 500;

/** Everything one folder's files are taken with. */
export interface TakeContext {
  sid: string;
  folder: FolderOptions;
  /** The folder's absolute path. */
  dir: string;
  ports: IntakePorts;
  /** Recorded as the documents' and tasks' creator. */
  creator: string;
}

/**
 * Takes one stable file, exactly once: it is hashed, then claimed in
 * PostgreSQL (with the ids its document and task will have) before anything
 * is stored; then stored, its task created (and started), the source moved
 * to done/ (or deleted), and the claim finished. Every step is idempotent by
 * the claim's ids, so `resume` after a crash at any point finishes the same
 * file without doubling it. A file the repository or the task service
 * refuses goes to error/ with a reason file, and nothing of it stays.
 */
export async function takeFile(c: TakeContext, name: string, seen: Seen): Promise<TakeResult> {
  let fh: FileHandle;
  try {
    // never follows a symlink (a link is refused before this, by lstat; O_NOFOLLOW closes the race);
    // O_NONBLOCK: a FIFO dropped in cannot hold the open until a writer comes (it is refused below).
    // Opened here, not in a file thread: a thread's descriptors are closed when it exits
    fh = await open(path.join(c.dir, name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { outcome: 'vanished' };
    if (code === 'ELOOP') return fail(c, name, undefined, new FileRefused('SYMLINK_REFUSED', 'symbolic links are not taken (the link, not its target, moved here)'));
    if (code === 'EACCES' || code === 'EPERM') return fail(c, name, undefined, new FileRefused('UNREADABLE', `the file cannot be read: ${code}`));
    return { outcome: 'retry', err };
  }
  try {
    // read and hashed in a file thread, with its fstat before and after the read (file-thread.ts)
    const read = await fileThreads.hash(fh.fd);
    if (!read.before.file) return await fail(c, name, undefined, new FileRefused('NOT_A_FILE', 'not a regular file'));
    if (!sameFile(read.before, seen)) return { outcome: 'changed' };
    if (read.before.size === 0) return await fail(c, name, undefined, new FileRefused('EMPTY_FILE', 'the file is empty (0 bytes)'));
    if (!read.after || !sameFile(read.after, seen) || read.size !== seen.size) return { outcome: 'changed' };
    const sha256 = read.sha256!;
    // the ids its document and task will have are fixed here, with the claim
    const claimIt = () => c.ports.claims.claim({
      source: c.dir, name, size: seen.size, mtimeMs: seen.mtimeMs, ino: seen.ino, sha256, docUuid: randomUUID(), tid: c.folder.task ? randomUUID() : null,
    });
    const first = await claimIt();
    let { claim, fresh } = first;
    if (!fresh && (claim.ino !== seen.ino || claim.sha256 !== sha256 || claim.size !== seen.size)) {
      // an unfinished claim of an earlier file at this name (replaced while the intake was down): settle it first
      await settleReplaced(c, claim);
      ({ claim, fresh } = await claimIt());
    }
    return await finishClaim(c, claim, fh.fd, fresh);
  } catch (err) {
    return { outcome: 'retry', err };
  } finally {
    await fh.close().catch(() => {});
  }
}

/**
 * Finishes an unfinished claim found at start (a crash left it): the file is
 * still in the folder (same file: go on), or gone (it was moved once stored:
 * finish the claim; gone before it was stored: nothing of it may stay).
 */
export async function resumeClaim(c: TakeContext, claim: IntakeClaim): Promise<TakeResult> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(path.join(c.dir, claim.name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    const st = fh && await fh.stat();
    if (!fh || !st || identity(st) !== claim.ino || st.size !== claim.size || st.mtimeMs !== claim.mtimeMs) {
      // not the claimed file any more (or gone): a stored claim was moved to done/ before the crash
      await settleReplaced(c, claim);
      return { outcome: 'changed' };
    }
    return await finishClaim(c, claim, fh.fd);
  } catch (err) {
    return { outcome: 'retry', err };
  } finally {
    await fh?.close().catch(() => {});
  }
}

/**
 * An unfinished claim whose file is no longer at its name: stored means the
 * crash came after the move to done/ (its task is made and started as
 * configured, then the claim is done); claimed means the file went before it
 * was stored, so what may exist of it is removed and the claim forgotten.
 */
async function settleReplaced(c: TakeContext, claim: IntakeClaim): Promise<void> {
  // stored: the claim says so (an older intake marked it), or its document exists with the claimed content
  const doc = claim.docUuid && (claim.state === 'stored'
    ? { uuid: claim.docUuid, name: claim.docName ?? claim.name, href: entryHref({ sid: c.folder.store.service, uuid: claim.docUuid }) }
    : await c.ports.work.storedDocument(c.folder.store.service, claim.docUuid, claim.sha256));
  if (doc) {
    await runTask(c, claim, doc);
    await c.ports.claims.finish(claim.id, 'done', { note: 'the source was gone at resume (moved before a restart)' }, { docName: doc.name, at: new Date() });
    return;
  }
  if (claim.docUuid) await c.ports.work.removeDocument(c.folder.store.service, claim.docUuid);
  await c.ports.claims.release(claim.id);
}

/** `fresh`: the claim was made by this take just now (its document cannot exist yet). */
async function finishClaim(c: TakeContext, claim: IntakeClaim, fd: number, fresh = false): Promise<TakeResult> {
  const { ports, folder } = c;
  const values = placeholders(c, claim);
  let stored;
  try {
    stored = await ports.work.storeDocument({
      service: folder.store.service,
      uuid: claim.docUuid!,
      fresh,
      ...(folder.store.collection ? { collection: folder.store.collection } : {}),
      name: claim.name,
      open: () => createReadStream('', { fd, start: 0, autoClose: false }),
      fd,
      sha256: claim.sha256,
      mimeType: mediaTypeOfName(claim.name),
      metadata: { ...fill(folder.store.metadata, values), source: { folder: c.dir, name: claim.name, takenAt: claim.claimed.toISOString() } },
      creator: c.creator,
      owner: folder.owner ?? null,
    });
  } catch (err) {
    if (err instanceof ContentChangedError) {
      // the file changed under the reader: nothing of this read stays; it is watched again
      await ports.work.removeDocument(folder.store.service, claim.docUuid!);
      await ports.claims.release(claim.id);
      return { outcome: 'changed' };
    }
    if (refusedByService(err)) return fail(c, claim.name, claim, new FileRefused(err.code, `the repository refused it: ${err.message}`));
    throw err;
  }
  // no "stored" mark: from here on the document under the claim's uuid is the record that it was stored
  // (`settleReplaced` looks for it), and the claim's `stored` time is written when it is finished
  const storedAt = new Date();
  if (claim.state === 'claimed') ports.metrics.taken(Math.max(0, (storedAt.getTime() - (claim.mtimeMs ?? storedAt.getTime())) / 1000));
  try {
    await runTask(c, claim, stored);
  } catch (err) {
    if (refusedByService(err)) return fail(c, claim.name, claim, new FileRefused(err.code, `the task service refused it: ${err.message}`));
    throw err;
  }
  // the source last: once it is gone, only the claim says what became of it. Only the claimed
  // file moves: a new file dropped at its name meanwhile (the read went on through the open
  // descriptor) stays for the next take.
  if (folder.after === 'delete') await removeSource(c.dir, claim.name, claim.ino ?? undefined);
  else await moveInto(c.dir, claim.name, DONE_DIR, claim.id, claim.ino ?? undefined);
  await ports.claims.finish(claim.id, 'done', undefined, { docName: stored.name, at: storedAt });
  ports.log.info({ file: claim.name, folder: c.dir, size: claim.size, uuid: stored.uuid, document: stored.name, tid: claim.tid }, 'hot folder: file taken');
  return { outcome: 'taken', claim };
}

async function runTask(c: TakeContext, claim: IntakeClaim, doc: { uuid: string; href: string }): Promise<void> {
  const t = c.folder.task;
  if (!t || !claim.tid) return;
  const values = placeholders(c, claim);
  await c.ports.work.createTask({
    service: t.service, tid: claim.tid, name: fill(t.name, values), metadata: fill(t.metadata, values),
    items: [{ href: doc.href, metadata: fill(t.itemMetadata, values) }], creator: c.creator, owner: c.folder.owner ?? null,
  });
  if (t.start) await c.ports.work.startTask(t.service, claim.tid, c.creator);
}

function placeholders(c: TakeContext, claim: Pick<IntakeClaim, 'name' | 'size' | 'sha256' | 'claimed'>): PlaceholderValues {
  const dot = claim.name.lastIndexOf('.');
  return {
    name: claim.name, stem: dot > 0 ? claim.name.slice(0, dot) : claim.name, ext: dot > 0 ? claim.name.slice(dot + 1) : '',
    size: claim.size, folder: c.dir, takenAt: claim.claimed.toISOString(), sha256: claim.sha256,
  };
}

/**
 * Moves a refused file to error/ with its reason beside it; what was stored
 * of it (document, task that never started) is removed first, then the claim
 * is finished as failed, then the file moves: a crash in between takes it
 * again and fails it again the same way.
 */
async function fail(c: TakeContext, name: string, claim: IntakeClaim | undefined, err: FileRefused): Promise<TakeResult> {
  const reason: FailureReason = { code: err.code, message: err.message, time: new Date().toISOString() };
  if (claim) {
    if (claim.tid && c.folder.task) await c.ports.work.removeTask(c.folder.task.service, claim.tid, c.creator);
    if (claim.docUuid) await c.ports.work.removeDocument(c.folder.store.service, claim.docUuid);
    await c.ports.claims.finish(claim.id, 'failed', reason);
  }
  const moved = await moveToError(c.dir, name, claim?.id ?? randomUUID().slice(0, 8), reason);
  c.ports.metrics.failed(err.code);
  c.ports.log.warn({ file: name, folder: c.dir, code: err.code, reason: err.message, movedTo: moved && path.join('error', moved) }, 'hot folder: file failed');
  return { outcome: 'failed', code: err.code };
}

/** A lost lease ends the run: the caller stops taking files at once. */
export const isLeaseLost = (err: unknown) => err instanceof LeaseLostError;
