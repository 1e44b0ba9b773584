import { Transform, pipeline } from 'node:stream';
import { entryHref } from '../../connectors/facets/repository.js';
import { AppError } from '../../errors/app-error.js';
import { describeFetchError } from '../../net/fetch-errors.js';
import { displayUrl, safeFetch } from '../../net/safe-fetch.js';
import type { Logger } from '../../logging/logger.js';
import type { Database } from '../../storage/driver/database.js';
import type { BlobStore } from '../../blobs/blob-store.js';
import { makePreview, type PreviewSizes } from '../../previews/preview-maker.js';
import { draftEntry, type EntryRow } from '../repository/entry.js';
import * as entries from '../repository/entry-store.js';
import type { RepositoryService } from '../repository/repository-service.js';
import { mediaTypeOf } from '../repository/media-type.js';
import { followPath, insertThenMake, renameOnDisk } from '../repository/disk-steps.js';
import { throwSqlError, translateSqlError } from '../../errors/sql-errors.js';
import { transactionWithUndo } from '../repository/undoable.js';
import { targetName, type CommandParams } from './command-params.js';
import * as commands from './command-store.js';

export interface RunnerDeps {
  db: Database;
  repo: RepositoryService;
  blobs: BlobStore;
  log: Logger;
  expirySec: number;
  import: { timeoutMs: number; allowPrivate: boolean; maxBytes: number };
  previews: PreviewSizes;
}

const nameExists = (name: string) => new AppError('NAME_EXISTS', `"${name}" already exists in the target collection`);
/** Reports a command's progress (see `CommandRunner.progress`). */
type Report = (done: number, total: number | null, final?: boolean) => Promise<void>;

/**
 * Runs one repository command in a worker. Every step is idempotent (entries a
 * command creates get ids derived from the command id), so a command re-run
 * after a crash or a lost queue finishes without duplicates.
 */
export class CommandRunner {
  constructor(private readonly d: RunnerDeps) {}

  async run(cid: string): Promise<void> {
    const cmd = await commands.transition(this.d.db, cid, 'running');
    if (!cmd) return; // delivered and deleted already, or final already: a duplicate job
    const progress = this.progress(cid);
    try {
      const result = await this.execute(cmd, progress.report);
      await commands.transition(this.d.db, cid, 'success', { result, expirySec: this.d.expirySec, progress: progress.latest() });
    } catch (err) {
      const error = this.publicError(err, cid);
      await commands.transition(this.d.db, cid, 'failure', { error, expirySec: this.d.expirySec, progress: progress.latest() });
    }
  }

  /**
   * Progress of one run. `report` writes at most every 250 ms and never
   * rejects: progress is advisory and must not fail (or escape) a transfer. A
   * `final` report is only remembered: the final state's transition writes
   * the latest figures with it, saving a round trip per command.
   */
  private progress(cid: string) {
    let last = 0;
    let latest: { done: number; total: number | null } | undefined;
    const report: Report = async (done, total, final = false) => {
      latest = { done, total };
      if (final || Date.now() - last < 250) return;
      last = Date.now();
      await commands.setProgress(this.d.db, cid, done, total).catch((err: unknown) => this.d.log.warn({ err, cid }, 'progress not recorded'));
    };
    return { report, latest: () => latest };
  }

  private async entry(sid: string, uuid: string): Promise<EntryRow> {
    const e = await entries.getEntry(this.d.db, sid, uuid);
    if (!e) throw new AppError('ENTRY_NOT_FOUND', `entry ${uuid} no longer exists`);
    return e;
  }

  private async execute(cmd: commands.CommandRow, report: Report): Promise<Record<string, unknown>> {
    const { backend } = this.d.repo.backend(cmd.sid);
    switch (cmd.command) {
      case 'copy': {
        const p = cmd.parameters as CommandParams<'copy'>;
        targetName('copy', p);
        const source = await this.entry(cmd.sid, p.source);
        const target = await this.entry(cmd.sid, p.target);
        const tree = await entries.subtree(this.d.db, cmd.sid, source.uuid);
        const ids = new Map<string, string>([[source.parent!, target.uuid]]);
        let done = 0;
        for (const e of tree) {
          const uuid = entries.derivedUuid(`${cmd.cid}:${e.uuid}`);
          ids.set(e.uuid, uuid);
          const parent = await this.entry(cmd.sid, ids.get(e.parent!)!);
          const name = e.uuid === source.uuid ? (p.name ?? e.name) : e.name;
          if (!(await entries.getEntry(this.d.db, cmd.sid, uuid))) {
            if (await entries.nameTaken(this.d.db, cmd.sid, parent.uuid, name)) throw nameExists(name);
            // row and file together: a failed insert leaves no copied file behind
            await transactionWithUndo(this.d.db, (tx, onRollback) => insertThenMake(tx, onRollback, backend, {
              uuid, sid: cmd.sid, parent: parent.uuid, name, type: e.type, metadata: e.metadata,
              creator: cmd.creator, owner: e.owner,
              content: e.content_version ? { size: e.size ?? 0, mimeType: e.mime_type ?? 'application/octet-stream', sha256: e.sha256, version: e.content_version } : null,
            }, () => (e.type === 'collection' ? backend.create({ ...e, uuid, name }, parent) : backend.copy(e, parent, name))));
            // same content, same preview: take the source's instead of rendering it again
            if (!(await entries.copyPreview(this.d.db, cmd.sid, e.uuid, uuid))) {
              await this.d.repo.requestPreview(await this.entry(cmd.sid, uuid)).catch(() => undefined);
            }
          }
          await report(++done, tree.length);
        }
        await report(done, tree.length, true);
        const copy = await this.entry(cmd.sid, ids.get(source.uuid)!);
        return { uuid: copy.uuid, href: entryHref(copy), entries: tree.length };
      }
      case 'move': {
        const p = cmd.parameters as CommandParams<'move'>;
        targetName('move', p);
        const source = await this.entry(cmd.sid, p.source);
        const target = await this.entry(cmd.sid, p.target);
        if (source.parent !== target.uuid || (p.name && p.name !== source.name)) {
          const name = p.name ?? source.name;
          if (await entries.nameTaken(this.d.db, cmd.sid, target.uuid, name, source.uuid)) throw nameExists(name);
          // Rows locked first, disk changed last, and put back when the transaction fails
          // (a name taken meanwhile, a target deleted meanwhile, a failed COMMIT).
          await transactionWithUndo(this.d.db, async (tx, onRollback) => {
            const locked = (await entries.lockSubtree(tx, cmd.sid, source.uuid))?.root;
            const from = locked?.parent ? await entries.getEntry(tx, cmd.sid, locked.parent) : undefined;
            if (!locked || !from) throw new AppError('ENTRY_NOT_FOUND', `entry ${source.uuid} no longer exists`);
            const renamed = name !== locked.name
              ? { ...locked, name, path: (await renameOnDisk(tx, onRollback, backend, locked, name)) ?? locked.path }
              : locked;
            const moved = await backend.move(renamed, target);
            onRollback(() => backend.move({ ...renamed, path: moved.path ?? renamed.path }, from));
            await followPath(tx, backend, renamed, moved.path);
            await entries.moveRecord(tx, cmd.sid, source.uuid, target.uuid, name, moved.path ?? null).catch(throwSqlError);
          });
        }
        await report(1, 1, true);
        const moved = await this.entry(cmd.sid, source.uuid);
        return { uuid: moved.uuid, href: entryHref(moved) };
      }
      case 'delete': {
        const p = cmd.parameters as CommandParams<'delete'>;
        // gone already: 0; the in-use rule is checked on the locked subtree, in the delete's transaction
        const count = await this.d.repo.removeEntry(cmd.sid, p.source, { unlessInUse: !p.force });
        if (count > 0) await report(count, count, true);
        return { deleted: count };
      }
      case 'import':
        return this.importUrl(cmd, report);
      case 'preview': {
        const p = cmd.parameters as CommandParams<'preview'>;
        const source = await this.entry(cmd.sid, p.source);
        const outcome = await makePreview({ db: this.d.db, blobs: this.d.blobs, sizes: this.d.previews }, backend, source);
        if (outcome === 'unsupported') throw new AppError('PREVIEW_UNSUPPORTED', `no preview can be made for ${source.mime_type ?? 'this content'}`);
        if (outcome === 'stale') throw new AppError('NOTHING_TO_PREVIEW', 'the document has no content to preview');
        return { uuid: source.uuid, href: `${entryHref(source)}/preview` };
      }
      default:
        throw new AppError('UNKNOWN_COMMAND', `unknown command ${cmd.command}`);
    }
  }

  /**
   * Imports a URL into a new document. The name is checked (and a clash found)
   * before anything is fetched; the entry is created only once the source has
   * answered 200, and any failure removes the entry this command created
   * without content, also on a re-run after a crash. The fetched body always
   * has an owner: `pipeline` ties it to the meter, so an error on either side,
   * or a write that fails before reading, destroys both and is observed.
   */
  private async importUrl(cmd: commands.CommandRow, report: Report): Promise<Record<string, unknown>> {
    const p = cmd.parameters as CommandParams<'import'>;
    const { backend } = this.d.repo.backend(cmd.sid);
    const uuid = entries.derivedUuid(`${cmd.cid}:import`);
    const earlier = await entries.getEntry(this.d.db, cmd.sid, uuid);
    // a crash after the content was stored but before success was recorded: done already
    if (earlier?.sha256) return { uuid, href: entryHref(earlier), size: earlier.size, sha256: earlier.sha256 };
    try {
      const name = targetName('import', p)!;
      const target = p.target ? await this.entry(cmd.sid, p.target) : await this.d.repo.root(cmd.sid);
      if (!earlier && (await entries.nameTaken(this.d.db, cmd.sid, target.uuid, name))) throw nameExists(name);
      const fetched = await safeFetch(new URL(p.url), {
        allowPrivate: this.d.import.allowPrivate, timeoutMs: this.d.import.timeoutMs,
        onError: (err, url) => this.d.log.warn({ err, cid: cmd.cid, url }, 'import: fetching failed'),
      });
      let sourceError: unknown;
      fetched.body.on('error', (err) => (sourceError ??= err));
      const total = fetched.contentLength ?? null;
      let done = 0;
      const meter = new Transform({
        transform: (chunk: Buffer, _e, cb) => {
          done += chunk.length;
          void report(done, total).then(() => cb(null, chunk)); // report never rejects
        },
      });
      pipeline(fetched.body, meter, () => undefined); // errors reach writeContent through `meter`, or are moot
      try {
        let entry = earlier;
        if (!entry) {
          const draft = draftEntry({
            uuid, sid: cmd.sid, parent: target.uuid, name, type: 'document', metadata: { source: displayUrl(fetched.url) }, creator: cmd.creator, owner: null,
          });
          const made = await backend.create(draft, target);
          try {
            await entries.insertEntry(this.d.db, { ...draft, parent: target.uuid, path: made.path ?? null });
          } catch (err) {
            // e.g. a racing import took the name: the empty file must not stay behind as a document
            await backend.remove({ ...draft, path: made.path ?? null }).catch((e: unknown) => this.d.log.warn({ err: e, uuid }, 'import: cannot remove the new file'));
            throw err;
          }
          entry = (await entries.getEntry(this.d.db, cmd.sid, uuid))!;
        }
        const written = await backend.writeContent(entry, meter, this.d.import.maxBytes).catch((err: unknown) => {
          if (sourceError === undefined || err instanceof AppError) throw err;
          this.d.log.warn({ err: sourceError, cid: cmd.cid }, 'import: the transfer broke off');
          throw new AppError('IMPORT_FETCH_FAILED', `fetching ${displayUrl(fetched.url)} failed: ${describeFetchError(sourceError)}`);
        });
        const mimeType = p.mimeType ?? mediaTypeOf(fetched.contentType) ?? 'application/octet-stream';
        const updated = await entries.setContent(this.d.db, cmd.sid, uuid, { size: written.size, mimeType, sha256: written.sha256, version: written.sha256 });
        await report(written.size, written.size, true);
        await this.d.repo.requestPreview(updated).catch((err: unknown) => this.d.log.warn({ err, uuid }, 'import: preview not queued; the reconciler will'));
        return { uuid, href: entryHref(updated), size: written.size, sha256: written.sha256 };
      } finally {
        meter.destroy(); // no-op after a complete write; on an early exit it frees the connection through pipeline
      }
    } catch (err) {
      // the import's own failure is what the caller sees; a clean-up that fails too (database gone) is logged
      await this.discardUnfinished(cmd.sid, uuid).catch((e: unknown) => this.d.log.warn({ err: e, cid: cmd.cid }, 'import: cannot remove the unfinished document'));
      throw err;
    }
  }

  /** Removes the entry an import created when it still has no content (the docs promise no empty document). */
  private async discardUnfinished(sid: string, uuid: string): Promise<void> {
    const entry = await entries.getEntry(this.d.db, sid, uuid);
    if (!entry || entry.sha256) return;
    const { backend } = this.d.repo.backend(sid);
    await backend.remove(entry).catch((err: unknown) => this.d.log.warn({ err, sid, uuid }, 'import: cannot remove the unfinished file'));
    await entries.deleteEntry(this.d.db, sid, uuid);
  }

  /** The stable code and plain message a failed command shows; anything unexpected goes to the log whole. */
  private publicError(err: unknown, cid: string): { code: string; message: string } {
    const known = translateSqlError(err) ?? err;
    if (known instanceof AppError) return { code: known.code, message: known.message };
    this.d.log.error({ err, cid }, 'command failed');
    return { code: 'COMMAND_FAILED', message: 'the command failed for an internal reason; the server log has the details' };
  }
}
