import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { SHARED, type Policy, type Target } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import type { Connector, RepositoryFacet } from '../../connectors/connector.js';
import { ContentChangedError, type IntakeDocument } from '../../connectors/ports.js';
import { entryHref } from '../../connectors/facets/repository.js';
import type { ConnectorRegistry } from '../../connectors/registry.js';
import { AppError, methodNotAllowed } from '../../errors/app-error.js';
import type { Outbox } from '../../outbox/outbox.js';
import type { Database, Sql } from '../../storage/driver/database.js';
import type { ListQuery } from '../../query/tree.js';
import { draftEntry, type ContentInfo, type EntryRow, type TaskRef } from './entry.js';
import * as store from './entry-store.js';
import { entryRows } from './entry-rows.js';
import { assertValidName } from './names.js';
import { metadataProblem } from './metadata-rules.js';
import { mergeMetadata } from '../lists/store/merge-metadata.js';
import { transactionWithUndo } from './undoable.js';
import { canRenderPreview } from '../../previews/render-preview.js';
import { insertThenMake, renameOnDisk } from './disk-steps.js';
import { throwSqlError } from '../../errors/sql-errors.js';
import { MicroBatcher } from '../../storage/micro-batcher.js';

export interface EntryInput {
  name: string;
  type: 'document' | 'collection';
  metadata: Record<string, unknown>;
}

export interface RecordChange {
  name?: string;
  metadata?: Record<string, unknown>;
  owner?: string | null;
  /** When given, must be the entry's type: the kind of an entry never changes. */
  type?: 'document' | 'collection';
}

/** What the preview job would record for a type no renderer takes; undefined for a previewable one. */
function noPreviewFor(mimeType: string | null): string | undefined {
  const mime = mimeType ?? 'application/octet-stream';
  return canRenderPreview(mime) ? undefined : `no preview for ${mime}`;
}

/** `name` with ` (<n>)` before its extension: `a.pdf` -> `a (2).pdf`. */
function numberedName(name: string, n: string): string {
  const dot = name.lastIndexOf('.');
  return dot > 0 ? `${name.slice(0, dot)} (${n})${name.slice(dot)}` : `${name} (${n})`;
}

/** What ownership an entry has for the policy: the root collection is shared. */
const target = (entry: Pick<EntryRow, 'parent' | 'creator' | 'owner'>): Target => (entry.parent === null ? SHARED : entry);

/** The owners and place of an entry: what its rights are decided on. */
export type EntryOwners = Pick<EntryRow, 'parent' | 'creator' | 'owner'>;

/** 400 unless merged metadata (a PATCH adds to what is stored) can still be stored. */
function checkMergedMetadata(metadata: Record<string, unknown>): void {
  const problem = metadataProblem(metadata);
  if (!problem) return;
  const path = ['body', 'metadata', ...problem.path.map(String)].join('.');
  throw new AppError('VALIDATION_FAILED', `the body is invalid: ${problem.message}`, { issues: [{ path, message: problem.message }] });
}

/** 409 `DOCUMENT_IN_USE` when tasks in status processing use the entry (`what`: the refused change, leading the message). */
export function refuseUsers(tasks: TaskRef[], what?: string): void {
  if (tasks.length > 0) {
    const message = `the document is used by ${tasks.length} task(s) in status processing`;
    throw new AppError('DOCUMENT_IN_USE', what ? `${what}: ${message}` : message, { tasks });
  }
}

/**
 * Repository operations of the Document Workflow API for every repository
 * connector: rights, the "document in use" rule, name rules, and keeping rows
 * and the backend's objects in step. Routes call this; it never sees HTTP.
 */
export class RepositoryService {
  private readonly syncs = new Map<string, Promise<void>>();
  /** `ingest`'s target collections, by service and path (their uuids). */
  private readonly intakeCollections = new Map<string, EntryRow>();
  /** The intakes' new documents of the same moment, inserted together (`ingest`); one name per collection and statement. */
  private readonly intakeInserts = new MicroBatcher<store.NewDocument, EntryRow | undefined>({
    many: (es) => store.insertDocumentsUnder(this.db, es),
    key: (e) => `${e.sid}\n${e.parent}\n${e.name}`,
  }, 2, 64, { gatherTurn: true });
  /** Syncs started since the process began; concurrent listings of one collection share one (see `sync`). */
  syncsStarted = 0;

  constructor(
    private readonly db: Database,
    private readonly registry: ConnectorRegistry,
    private readonly policy: Policy,
    private readonly outbox: Outbox,
    private readonly maxUploadBytes: number,
  ) {}

  /** The connector's repository backend, or 404 when the service has none. */
  backend(sid: string): { connector: Connector; backend: RepositoryFacet } {
    const connector = this.registry.get(sid);
    if (!connector.repository) {
      throw new AppError('NO_REPOSITORY', `service "${sid}" has no document repository`, { sid });
    }
    return { connector, backend: connector.repository };
  }

  async root(sid: string): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    return store.ensureRoot(this.db, sid, backend.sync ? '' : null);
  }

  /** Loads an entry the caller may see (404 when absent, 403 when not theirs). */
  async get(p: Principal, sid: string, uuid: string, action: 'read' | 'write' | 'delete' = 'read'): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    let entry = await store.getEntry(this.db, sid, uuid);
    if (entry && backend.refresh && entry.parent !== null) entry = await backend.refresh(entryRows(this.db, sid), entry);
    if (!entry) throw new AppError('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
    this.authorize(p, entry, action);
    return entry;
  }

  /** The shared root collection is usable by anybody with the area right; other entries follow ownership. */
  authorize(p: Principal, entry: EntryRow, action: 'read' | 'write' | 'delete'): void {
    this.policy.require(p, 'documents', action, target(entry));
  }

  /**
   * Why `p` may not read a document, as `GET …/content` would refuse it (404
   * `ENTRY_NOT_FOUND` when it is gone, 403 `FORBIDDEN` or `NOT_OWNER`), with a
   * message naming it; undefined when `p` may. `entry`: the document's row as
   * the caller read it, null when there is none. For work done for a user
   * outside their request: a task run reads its items' documents with the
   * task's principal (`runAs`); a connector that reads documents for a task
   * (the print connector) goes through this service with the same principal
   * (`openContent(runAs(task), …)` applies this rule, with the backend's
   * refresh).
   */
  readRefusal(p: Principal, doc: { sid: string; uuid: string }, entry: EntryOwners | null): AppError | undefined {
    const href = entryHref(doc);
    const details = { sid: doc.sid, uuid: doc.uuid, href };
    if (!entry) return new AppError('ENTRY_NOT_FOUND', `document ${href} not found`, details);
    if (this.policy.may(p, 'documents', 'read', target(entry))) return undefined;
    return this.policy.may(p, 'documents', 'read')
      ? new AppError('NOT_OWNER', `document ${href} belongs to another user: ${p.user} may not read it`, details)
      : new AppError('FORBIDDEN', `${p.user} may not read documents, so not ${href}`, details);
  }

  private ownedFilter(p: Principal): string[] | undefined {
    return this.policy.listingScope(p, 'documents');
  }

  async children(p: Principal, sid: string, uuid: string, q: ListQuery): Promise<{ parent: EntryRow; rows: EntryRow[] }> {
    const parent = await this.get(p, sid, uuid);
    if (parent.type !== 'collection') throw new AppError('NOT_A_COLLECTION', `entry ${uuid} is not a collection`, { uuid });
    await this.sync(sid, parent, false);
    return { parent, rows: await store.listEntries(this.db, sid, { parent: parent.uuid, ownedBy: this.ownedFilter(p) }, q) };
  }

  /**
   * The change counter of a service whose rows are the whole truth, for
   * listing caches; undefined when the backend's tree can change behind the
   * database's back (filesystem), where nothing may be cached.
   */
  async generation(sid: string): Promise<number | undefined> {
    const { backend } = this.backend(sid);
    if (backend.sync) return undefined;
    return store.generation(this.db, sid);
  }

  /** Identities a listing is limited to (scope own), or undefined (scope all). */
  listingScope(p: Principal): string[] | undefined {
    return this.ownedFilter(p);
  }

  /**
   * Brings the rows below `collection` in line with a backend whose tree can
   * change behind the database's back. Single flight: a listing that arrives
   * while the same sync (service, collection, recursive or not) runs awaits
   * that one instead of starting another, so N concurrent listings of a big
   * tree cost one walk of it and hold one database connection, not N. Such a
   * listing may miss a change made on disk during the shared walk, as if the
   * change had come a moment later.
   */
  private sync(sid: string, collection: EntryRow, recursive: boolean): Promise<void> {
    const { backend } = this.backend(sid);
    if (!backend.sync) return Promise.resolve();
    const key = `${sid}\n${collection.uuid}\n${recursive}`;
    let running = this.syncs.get(key);
    if (!running) {
      this.syncsStarted++;
      running = this.db.transaction((tx) => backend.sync!(entryRows(tx, sid), collection, recursive)).finally(() => this.syncs.delete(key));
      this.syncs.set(key, running);
    }
    return running;
  }

  /** The root collection and a page of its entries: direct children (`root`) or every entry (`all`). */
  async list(p: Principal, sid: string, scope: 'root' | 'all', q: ListQuery): Promise<{ root: EntryRow; entries: EntryRow[] }> {
    this.policy.require(p, 'documents', 'read');
    const root = await this.root(sid);
    await this.sync(sid, root, scope === 'all');
    const entries = await store.listEntries(this.db, sid, { parent: scope === 'root' ? root.uuid : undefined, ownedBy: this.ownedFilter(p) }, q);
    return { root, entries };
  }

  /** `uuid`: the new entry's id (the runtime's own work fixes it up front, to be idempotent). */
  async create(p: Principal, sid: string, parentUuid: string | undefined, input: EntryInput, owner: string | null, uuid: string = randomUUID(),
    content?: ContentInfo): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    assertValidName(input.name);
    if (!parentUuid) this.policy.require(p, 'documents', 'write', SHARED);
    const parent = parentUuid ? await this.get(p, sid, parentUuid, 'write') : await this.root(sid);
    if (parent.type !== 'collection') throw methodNotAllowed('PARENT_NOT_COLLECTION', `entry ${parent.uuid} is not a collection; entries can only be created in collections`);
    const row = draftEntry({
      uuid, sid, parent: parent.uuid, name: input.name, type: input.type, metadata: input.metadata, creator: p.user, owner,
    });
    // a name in use is refused by the unique index (entries_children) before anything is made on disk
    const noPreview = content ? noPreviewFor(content.mimeType) : undefined;
    return transactionWithUndo(this.db, async (tx, onRollback) => {
      const stored = (await insertThenMake(tx, onRollback, backend, { ...row, parent: parent.uuid, content, noPreview }, () => backend.create(row, parent)))!;
      // with its content (a `contentByHash` backend's, written already): its preview is asked for in the same
      // transaction (a type no renderer takes has its "no preview" recorded by the insert)
      if (stored && content) await this.requestPreview(stored, tx);
      // a backend that keeps files fills in what the new (empty) file looks like
      return (backend.refresh ? await backend.refresh(entryRows(tx, sid), stored) : stored) ?? stored;
    }).catch((err: unknown) => {
      if (err instanceof AppError && err.code === 'NAME_EXISTS') throw new AppError('NAME_EXISTS', `"${input.name}" already exists in this collection`);
      throw err;
    });
  }

  /**
   * Stores a document for the runtime's own work (an intake), idempotent by
   * `doc.uuid`: a document of that uuid whose content has the claimed sha256
   * is returned as it is; one left without content (a crash between the two
   * steps) gets its content; otherwise it is created in `doc.collection`
   * (made when missing) under `doc.name`, or ` (2)`, ` (3)`, ... before the
   * extension when the name is taken. On a `contentByHash` backend (the
   * store) a new document's bytes are written first and the document is
   * created with them in one transaction. A content that does not hash to
   * `doc.sha256` (the file changed while it was read) throws
   * `ContentChangedError` and is left for the caller to remove.
   */
  async ingest(p: Principal, doc: IntakeDocument): Promise<EntryRow> {
    const sid = doc.service;
    // a fresh claim's uuid is new: nothing to find
    let entry = doc.fresh ? undefined : await store.getEntry(this.db, sid, doc.uuid);
    if (entry?.content_version && entry.sha256 === doc.sha256) return entry;
    // content addressed by hash: the bytes first, then the document with them in one transaction
    let content: ContentInfo | undefined;
    const { backend } = this.backend(sid);
    if (!entry && backend.contentByHash && backend.contentWrite) {
      const draft = draftEntry({
        uuid: doc.uuid, sid, parent: null, name: doc.name, type: 'document', metadata: {}, creator: p.user, owner: doc.owner,
      });
      const written = doc.fd !== undefined && backend.writeFile
        ? await backend.writeFile(draft, doc.fd, this.maxUploadBytes)
        : await backend.writeContent(draft, doc.open(), this.maxUploadBytes);
      // the file changed since it was claimed: nothing of it is recorded (the blob is collected as garbage)
      if (written.sha256 !== doc.sha256) {
        throw new ContentChangedError(`the content stored for ${doc.name} (sha256 ${written.sha256}) is not the one claimed (${doc.sha256})`);
      }
      content = { size: written.size, mimeType: doc.mimeType ?? 'application/octet-stream', sha256: written.sha256, version: written.sha256 };
    }
    let created = false;
    for (let n = 1, fresh = false; !entry; n++) {
      // the target collection is looked up once per process and path; gone meanwhile: looked up again, once
      const key = `${sid}\n${doc.collection ?? ''}`;
      const parent = this.intakeCollections.get(key) ?? (doc.collection ? await this.collectionAt(p, sid, doc.collection) : await this.root(sid));
      this.intakeCollections.set(key, parent);
      const name = n === 1 ? doc.name : numberedName(doc.name, n <= 99 ? String(n) : doc.uuid.slice(0, 8));
      try {
        // new bytes of a type no renderer takes, on a backend without objects of its own: the document is
        // one statement (its parent checked in it); nothing inserted means the long way finds out why
        const noPreview = content && noPreviewFor(content.mimeType);
        let made: EntryRow | undefined;
        if (content && noPreview) {
          assertValidName(name);
          this.authorize(p, parent, 'write');
          made = await this.intakeInserts.run({
            uuid: doc.uuid, sid, parent: parent.uuid, name, type: 'document', metadata: doc.metadata, creator: p.user, owner: doc.owner, content, noPreview,
          }).catch(throwSqlError);
        }
        // `create` inserts nothing when the uuid exists already (another taker of the same claim got
        // there first): that entry is this document
        made ??= await this.create(p, sid, parent.uuid, { name, type: 'document', metadata: doc.metadata }, doc.owner, doc.uuid, content);
        created = made !== undefined;
        entry = made ?? await store.getEntry(this.db, sid, doc.uuid);
      } catch (err) {
        if (err instanceof AppError && err.code === 'ENTRY_NOT_FOUND' && !fresh) {
          this.intakeCollections.delete(key);
          fresh = true;
          n--;
          continue;
        }
        if (!(err instanceof AppError && err.code === 'NAME_EXISTS') || n > 100) throw err;
      }
    }
    // made with its content (above), or by another taker of the same claim that got there first with it
    if (entry?.content_version && entry.sha256 === doc.sha256) return entry;
    // the row just read or made is the one written (rights checked on it); a document made by this call
    // has had no content a running task could be using
    const written = await this.writeContent(p, sid, doc.uuid, doc.open(), doc.mimeType ?? 'application/octet-stream', { entry, created });
    if (written.sha256 !== doc.sha256) {
      throw new ContentChangedError(`the content stored for ${doc.name} (sha256 ${written.sha256}) is not the one claimed (${doc.sha256})`);
    }
    return written;
  }

  /** The entry of this uuid as stored, rights unchecked: the runtime's own work (an intake finding what it stored). */
  storedIntake(sid: string, uuid: string): Promise<EntryRow | undefined> {
    return store.getEntry(this.db, sid, uuid);
  }

  /** The collection at `path` (`a/b`, below the root), made where missing. */
  private async collectionAt(p: Principal, sid: string, path: string): Promise<EntryRow> {
    let at = await this.root(sid);
    for (const name of path.split('/').filter(Boolean)) {
      await this.sync(sid, at, false);
      let next = await store.childNamed(this.db, sid, at.uuid, name);
      if (!next) {
        try {
          next = await this.create(p, sid, at.uuid, { name, type: 'collection', metadata: {} }, null);
        } catch (err) {
          // made by another writer meanwhile
          if (!(err instanceof AppError && err.code === 'NAME_EXISTS')) throw err;
          next = await store.childNamed(this.db, sid, at.uuid, name);
        }
      }
      if (next?.type !== 'collection') throw new AppError('PARENT_NOT_COLLECTION', `"${path}" is not a collection in service "${sid}"`);
      at = next;
    }
    return at;
  }

  /** PUT: the record is replaced by `change` (metadata wholesale); PATCH: merged. */
  async update(p: Principal, sid: string, uuid: string, change: RecordChange, mode: 'replace' | 'merge'): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'write');
    if (entry.parent === null) throw new AppError('ROOT_READONLY', 'the root collection cannot be changed');
    if (change.type !== undefined && change.type !== entry.type) {
      throw new AppError('TYPE_IMMUTABLE', `entry ${uuid} is a ${entry.type}; its type cannot be changed`);
    }
    const name = change.name ?? entry.name;
    if (name !== entry.name) assertValidName(name);
    return transactionWithUndo(this.db, async (tx, onRollback) => {
      // Locked (with everything below when renaming) so a content write, a delete or another
      // rename of the same files waits; then everything is checked before the disk changes.
      const renaming = name !== entry.name;
      const locked = renaming ? (await store.lockSubtree(tx, sid, uuid))?.root : await store.getEntry(tx, sid, uuid, true);
      if (!locked || locked.parent === null) throw new AppError('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
      const metadata = mode === 'replace' ? (change.metadata ?? {}) : mergeMetadata(locked.metadata, change.metadata ?? {});
      checkMergedMetadata(metadata);
      const owner = change.owner === undefined ? locked.owner : change.owner;
      let path: string | undefined;
      if (name !== locked.name) {
        if (await store.nameTaken(tx, sid, locked.parent, name, uuid)) throw new AppError('NAME_EXISTS', `"${name}" already exists in this collection`);
        path = await renameOnDisk(tx, onRollback, backend, locked, name);
      }
      return store.updateRecord(tx, sid, uuid, { name, metadata, owner, path }).catch(throwSqlError);
    });
  }

  /** Tasks in status processing that use the entry or anything below it. */
  async activeTasks(sid: string, entry: EntryRow): Promise<TaskRef[]> {
    const ids = entry.type === 'collection' ? (await store.subtree(this.db, sid, entry.uuid)).map((e) => e.uuid) : [entry.uuid];
    return store.activeTasksUsing(this.db, ids);
  }

  async refuseIfInUse(sid: string, entry: EntryRow, what: string): Promise<void> {
    refuseUsers(await this.activeTasks(sid, entry), what);
  }

  /**
   * `get` with the tasks in status processing that use the entry or anything
   * below it (`refuseUsers` turns them into the 409), in one query unless the
   * backend refreshes entries from elsewhere. Rights are checked before the
   * caller looks at the users, so 404 and 403 come first. The root
   * collection's users are not looked up (empty): callers refuse to change it.
   */
  async getWithUsers(p: Principal, sid: string, uuid: string, action: 'write' | 'delete'): Promise<{ entry: EntryRow; users: TaskRef[] }> {
    const { backend } = this.backend(sid);
    if (backend.refresh) {
      const entry = await this.get(p, sid, uuid, action);
      return { entry, users: entry.parent === null ? [] : await this.activeTasks(sid, entry) };
    }
    const found = await store.getEntryWithUsers(this.db, sid, uuid);
    if (!found) throw new AppError('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
    this.authorize(p, found.entry, action);
    return found;
  }

  async remove(p: Principal, sid: string, uuid: string, force: boolean): Promise<void> {
    const { entry, users } = force ? { entry: await this.get(p, sid, uuid, 'delete'), users: [] } : await this.getWithUsers(p, sid, uuid, 'delete');
    if (entry.parent === null) throw new AppError('ROOT_PROTECTED', 'the root collection cannot be deleted');
    refuseUsers(users, 'cannot delete');
    // the in-use rule once more under the locks: a start of a task using the entry may have committed
    // since the read above, or be about to (it waits for the task rows this takes)
    if (!(await this.removeEntry(sid, uuid, { unlessInUse: !force }))) throw new AppError('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
  }

  /**
   * Deletes the entry, everything below it and the backend's objects (no
   * rights checked: callers did). Returns how many entries went; 0 when the
   * entry was gone already. With `unlessInUse`, a task in status processing
   * using anything in the locked subtree refuses the delete (409
   * `DOCUMENT_IN_USE`), checked under the locks.
   */
  async removeEntry(sid: string, uuid: string, opts: { unlessInUse?: boolean } = {}): Promise<number> {
    const { backend } = this.backend(sid);
    return this.db.transaction(async (tx) => {
      // Locks the entry and everything below: a content write or rename in there waits, then finds it gone.
      const locked = await store.lockSubtree(tx, sid, uuid, { users: opts.unlessInUse });
      if (!locked) return 0;
      if (locked.root.parent === null) throw new AppError('ROOT_PROTECTED', 'the root collection cannot be deleted');
      if (opts.unlessInUse) refuseUsers(locked.users ?? [], 'cannot delete');
      await store.deleteEntry(tx, sid, uuid);
      // Once more after the delete, in a statement of its own: `users` found the tasks through the items its
      // snapshot had, and an item appended just after it, with a start of its task, may both have committed
      // since (seen in test/api/churn). A start committed before this statement is seen here; one that
      // commits later ran after the delete, and its item fails, naming the document.
      if (opts.unlessInUse) refuseUsers(await store.activeTasksUsing(tx, locked.uuids), 'cannot delete');
      // The disk last: should COMMIT still fail, rows without files are what the next read drops.
      await backend.remove(locked.root);
      return locked.size;
    });
  }

  async openContent(p: Principal, sid: string, uuid: string, range?: { start: number; end: number }): Promise<{ entry: EntryRow; stream: Readable }> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'read');
    if (entry.type !== 'document') throw new AppError('NOT_A_DOCUMENT', `entry ${uuid} is a collection; it has no content`);
    if (entry.content_version === null) throw new AppError('NO_CONTENT', `document ${uuid} has no content`);
    const stream = await backend.openContent(entry, range);
    if (!stream) throw new AppError('NO_CONTENT', `the content of document ${uuid} is missing`);
    return { entry, stream };
  }

  /**
   * PUT content. `known`: the entry's row as the caller (ingest) just read or
   * made it, so it is not read again; `created`: made by that call, so no
   * running task can be using a content of it (the in-use check is skipped).
   */
  async writeContent(p: Principal, sid: string, uuid: string, source: Readable, mimeType: string,
    known?: { entry: EntryRow; created: boolean }): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    // a row the caller just read stands for the entry unless the backend refreshes rows from elsewhere (files)
    const reuse = known && !backend.refresh ? known.entry : undefined;
    if (reuse) this.authorize(p, reuse, 'write');
    let entry = reuse ?? await this.get(p, sid, uuid, 'write');
    if (entry.type !== 'document') throw new AppError('COLLECTION_CONTENT_NOT_ACCEPTABLE', `entry ${uuid} is a collection; collections have no content`);
    if (!backend.contentWrite) throw new AppError('CONTENT_READONLY', `service "${sid}" does not allow content changes`);
    if (!known?.created) await this.refuseIfInUse(sid, entry, 'cannot change the content');
    // Bytes are staged first (the upload may take long); they replace the old content only under
    // the row lock, so a DELETE of the entry either comes after (and removes them) or before
    // (and this write fails with 404, leaving nothing behind: no file comes back). The new
    // content and its preview job commit together.
    const stage = (e: EntryRow) => backend.stageContent
      ? backend.stageContent(e, source, this.maxUploadBytes)
      : backend.writeContent(e, source, this.maxUploadBytes).then((w) => ({ ...w, commit: async () => {}, discard: async () => {} }));
    let staged;
    for (let attempt = 1; ; attempt++) {
      try {
        staged = await stage(entry);
        break;
      } catch (err) {
        // The backend's early check (before it reads a byte) looked at the path read above; a rename
        // of the entry or of a collection above it may have moved the files since (its transaction
        // renames on disk under the rows' lock, then commits, or fails and moves them back before
        // it lets go of the lock). Wait for that lock, then check again where the entry now is, at
        // a new path or at the same one, while the body is still unread; an entry that is gone
        // stays 404 (`get`), and so does a path still missing after the last attempt.
        if (!(err instanceof AppError && err.code === 'ENTRY_NOT_FOUND') || source.readableDidRead || attempt >= 3) throw err;
        await this.db.transaction((tx) => store.getEntry(tx, sid, uuid, true));
        entry = await this.get(p, sid, uuid, 'write');
      }
    }
    try {
      return await this.db.transaction(async (tx) => {
        const locked = await store.getEntry(tx, sid, uuid, true);
        if (!locked) throw new AppError('ENTRY_NOT_FOUND', `entry ${uuid} was deleted while its content was written`, { sid, uuid });
        // the in-use rule again under the lock: a task using the document may have started during the upload
        if (!known?.created) refuseUsers(await store.activeTasksUsing(tx, [uuid]), 'cannot change the content');
        await staged.commit(locked);
        const updated = await store.setContent(tx, sid, uuid, { size: staged.size, mimeType, sha256: staged.sha256, version: staged.sha256 }, noPreviewFor(mimeType));
        await this.requestPreview(updated, tx);
        return updated;
      });
    } finally {
      await staged.discard();
    }
  }

  async deleteContent(p: Principal, sid: string, uuid: string): Promise<void> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'write');
    if (entry.type !== 'document') throw methodNotAllowed('COLLECTION_CONTENT_UNSUPPORTED', `entry ${uuid} is a collection; it has no content`);
    const removeContent = backend.contentDelete ? backend.deleteContent?.bind(backend) : undefined;
    if (!removeContent) {
      throw methodNotAllowed('CONTENT_DELETE_UNSUPPORTED', `service "${sid}" keeps content with every document; delete the document instead`);
    }
    await this.refuseIfInUse(sid, entry, 'cannot delete the content');
    await this.db.transaction(async (tx) => {
      // under the entry's lock, the in-use rule once more (a start may have committed since), the disk last
      const locked = await store.getEntry(tx, sid, uuid, true);
      if (!locked) throw new AppError('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
      refuseUsers(await store.activeTasksUsing(tx, [uuid]), 'cannot delete the content');
      await store.setContent(tx, sid, uuid, null);
      await removeContent(locked);
    });
  }

  /**
   * Asks for a preview of the entry's current content (no-op without content),
   * through the outbox: pass the transaction that set the content. A type
   * no renderer takes gets its "no preview" recorded at once instead.
   */
  async requestPreview(entry: EntryRow, tx: Sql = this.db): Promise<void> {
    if (entry.type !== 'document' || !entry.content_version) return;
    if (entry.preview_of === entry.content_version) return; // recorded with the content already
    // a type no renderer takes is recorded at once, as the preview job would record it: no job, no thread
    const noPreview = noPreviewFor(entry.mime_type);
    if (noPreview) {
      await store.setPreview(tx, entry.sid, entry.uuid, entry.content_version, { preview: null, thumb: null, error: noPreview });
      return;
    }
    await this.outbox.add(tx, 'preview.render', { sid: entry.sid, uuid: entry.uuid, version: entry.content_version });
  }

  /** Document ids (of any service) not used by a task in status processing. */
  async inactives(p: Principal, uuids: string[]): Promise<string[]> {
    this.policy.require(p, 'documents', 'read');
    return store.inactiveOf(this.db, uuids);
  }

  canSee(p: Principal, entry: EntryRow, action: 'read' | 'write' | 'delete'): boolean {
    return this.policy.may(p, 'documents', action, target(entry));
  }

}
