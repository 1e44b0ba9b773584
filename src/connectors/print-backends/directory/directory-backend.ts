import { randomBytes } from 'node:crypto';
import { constants, createWriteStream } from 'node:fs';
import { access, link, stat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { syncDir } from '../../../blobs/dir-sync.js';
import { AppError } from '../../../errors/app-error.js';
import { ConfinementError, type PrintConfinement, type PrintTarget } from '../confinement.js';
import { PrintDeliveryError, type PrintBackend, type PrintBackendType, type PrintTicket } from '../print-backend.js';

const JOB_ID = /^[A-Za-z0-9_-]{1,80}$/;

/** `<jobId>-<name>` with the name reduced to safe characters: never a path, never hidden. */
export function deliveryName(ticket: PrintTicket): string {
  const safe = ticket.name.normalize('NFC').replace(/[^A-Za-z0-9._ -]/g, '_').replace(/^[.\s]+/, '').slice(0, 150).trim();
  return `${ticket.jobId}-${safe || 'document'}`;
}

/** An error's code for messages: the errno code, never the error's text (a file system error's text names the absolute path). */
const code = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code ?? (err as Error | undefined)?.name ?? 'error';

/**
 * A directory as a printer (`file:///dir`): one file per job, for RIPs and
 * archives that pick files up. A job is written under a hidden temporary
 * name, synced, then linked to its final name, so a reader never sees a
 * partial file; the link fails when the job's file exists, so a second
 * delivery of a job is refused (`duplicate`) instead of overwriting the
 * first. The directory must exist: a missing one is an offline printer. It
 * must be under `print.confinement.directoryRoots`: every send and check
 * asks the confinement rule for its real path and writes there. Messages
 * name the file relative to the directory and errors by code, never the
 * absolute path (job messages are shown to the job's user).
 */
export class DirectoryBackend implements PrintBackend {
  readonly connection: string;
  readonly target: PrintTarget;

  constructor(private readonly dir: string, private readonly confinement: PrintConfinement) {
    this.connection = pathToFileURL(dir).href;
    this.target = { kind: 'directory', path: dir };
  }

  async send(ticket: PrintTicket, content: Readable, signal: AbortSignal): Promise<{ deviceJobId: string; message: string }> {
    if (!JOB_ID.test(ticket.jobId)) {
      content.destroy();
      throw new PrintDeliveryError('refused', 'the job id cannot name a file');
    }
    if (signal.aborted) {
      content.destroy();
      throw new PrintDeliveryError('not-delivered', 'aborted before sending', { cause: signal.reason });
    }
    // the real directory, judged by the confinement rule now: the job goes there, not through a link swapped in later
    let dir: string;
    try {
      dir = await this.confinement.directory(this.dir);
    } catch (err) {
      content.destroy();
      throw new PrintDeliveryError('refused', (err as Error).message, { cause: err });
    }
    const name = deliveryName(ticket);
    const final = path.join(dir, name);
    const temp = path.join(dir, `.${ticket.jobId}.${randomBytes(6).toString('hex')}.part`);
    try {
      // `wx`: never an existing file; `flush`: synced to disk before it counts as written
      await pipeline(content, createWriteStream(temp, { flags: 'wx', mode: 0o644, flush: true }), { signal });
    } catch (err) {
      content.destroy();
      await unlink(temp).catch(() => {});
      throw new PrintDeliveryError('not-delivered', `job not written (${code(err)})`, { cause: err });
    }
    try {
      await link(temp, final);
    } catch (err) {
      await unlink(temp).catch(() => {});
      if (code(err) === 'EEXIST') throw new PrintDeliveryError('duplicate', `${name} was already delivered`, { cause: err });
      throw new PrintDeliveryError('not-delivered', `job not written (${code(err)})`, { cause: err });
    }
    // the job is delivered; a leftover hidden temporary name is harmless
    await unlink(temp).catch(() => {});
    // the new name survives a power loss once the directory is synced (the bytes were, by `flush`)
    try {
      await syncDir(dir);
    } catch (err) {
      throw new PrintDeliveryError('uncertain', `the job's file was written but the directory was not synced (${code(err)})`, { cause: err });
    }
    return { deviceJobId: name, message: `written as ${name}` };
  }

  async checkPhysical(): Promise<{ reachable: boolean; message: string; checked: Date }> {
    const checked = new Date();
    try {
      const dir = await this.confinement.directory(this.dir);
      if (!(await stat(dir)).isDirectory()) return { reachable: false, message: 'not a directory', checked };
      await access(dir, constants.W_OK);
      return { reachable: true, message: 'directory writable', checked };
    } catch (err) {
      if (err instanceof ConfinementError) return { reachable: false, message: err.message, checked };
      return { reachable: false, message: `directory not usable (${code(err)})`, checked };
    }
  }
}

export const directoryBackendType: PrintBackendType = {
  name: 'directory',
  schemes: ['file'],
  description: 'Writes each job as one file into a directory (file:///path)',
  detectsDuplicates: true,
  create(url, ctx) {
    if (url.host !== '' && url.host !== 'localhost') throw new AppError('INVALID_CONNECTION', 'a file:// connection names a local directory: file:///path');
    if (url.search || url.hash || url.username || url.password) throw new AppError('INVALID_CONNECTION', 'a file:// connection has no query, fragment or credentials');
    const dir = path.resolve(fileURLToPath(url));
    return new DirectoryBackend(dir, ctx.confinement);
  },
};
