import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Permissions } from '../../auth/permissions.js';
import { isOwn, type Principal } from '../../auth/principal.js';
import type { Connector, RepositoryFacet } from '../../connectors/connector.js';
import type { ConnectorRegistry } from '../../connectors/registry.js';
import { AppError, conflict, methodNotAllowed, notAcceptable, notFound } from '../../errors/app-error.js';
import type { JobQueue } from '../../queue/job-queue.js';
import { isSqlError, type Database } from '../../storage/driver/database.js';
import type { ListQuery } from '../../query/list-query.js';
import { draftEntry, type EntryRow, type TaskRef } from './entry.js';
import * as store from './entry-store.js';

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

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Nested objects merge key by key; nothing is removed (PATCH semantics). */
export function mergeMetadata(base: Plain, change: Plain): Plain {
  const out: Plain = { ...base };
  for (const [k, v] of Object.entries(change)) out[k] = isPlain(out[k]) && isPlain(v) ? mergeMetadata(out[k], v) : v;
  return out;
}

const NAME_MAX = 255;
function checkName(name: string): void {
  // control characters are refused on purpose: they break file systems and logs
  // eslint-disable-next-line no-control-regex
  if (name.length === 0 || name.length > NAME_MAX || /[\u0000-\u001f/\\]/.test(name) || name === '.' || name === '..') {
    throw new AppError(400, 'INVALID_NAME', `"${name.slice(0, 80)}" is not a valid entry name (1-255 characters, no "/", "\\" or control characters, not "." or "..")`);
  }
}

const UNIQUE_VIOLATION = '23505';
function translate(err: unknown): never {
  if (isSqlError(err, UNIQUE_VIOLATION)) throw conflict('NAME_EXISTS', 'an entry with this name already exists in the collection');
  throw err;
}

/**
 * Repository operations of the Document Workflow API for every repository
 * connector: rights, the "document in use" rule, name rules, and keeping rows
 * and the backend's objects in step. Routes call this; it never sees HTTP.
 */
export class RepositoryService {
  constructor(
    private readonly db: Database,
    private readonly registry: ConnectorRegistry,
    private readonly permissions: Permissions,
    private readonly queue: JobQueue,
    private readonly maxUploadBytes: number,
  ) {}

  /** The connector's repository backend, or 404 when the service has none. */
  backend(sid: string): { connector: Connector; backend: RepositoryFacet } {
    const connector = this.registry.get(sid);
    if (!connector.repository) {
      throw notFound('NO_REPOSITORY', `service "${sid}" has no document repository`, { sid });
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
    if (entry && backend.refresh && entry.parent !== null) entry = await backend.refresh(this.db, entry);
    if (!entry) throw notFound('ENTRY_NOT_FOUND', `no entry ${uuid} in service "${sid}"`, { sid, uuid });
    this.authorize(p, entry, action);
    return entry;
  }

  /** The shared root collection is readable by anybody with the area right; other entries follow ownership. */
  authorize(p: Principal, entry: EntryRow, action: 'read' | 'write' | 'delete'): void {
    if (entry.parent === null) this.permissions.require(p, 'documents', action);
    else this.permissions.requireOn(p, 'documents', action, entry);
  }

  private ownedFilter(p: Principal): string[] | undefined {
    return this.permissions.require(p, 'documents', 'read') === 'own' ? p.identities : undefined;
  }

  async children(p: Principal, sid: string, uuid: string, q: ListQuery): Promise<{ parent: EntryRow; rows: EntryRow[] }> {
    const parent = await this.get(p, sid, uuid);
    if (parent.type !== 'collection') throw notFound('NOT_A_COLLECTION', `entry ${uuid} is not a collection`, { uuid });
    const { backend } = this.backend(sid);
    if (backend.sync) await this.db.transaction((tx) => backend.sync!(tx, parent, false));
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

  /** The root collection and a page of its entries: direct children (`root`) or every entry (`all`). */
  async list(p: Principal, sid: string, scope: 'root' | 'all', q: ListQuery): Promise<{ root: EntryRow; entries: EntryRow[] }> {
    this.permissions.require(p, 'documents', 'read');
    const root = await this.root(sid);
    const { backend } = this.backend(sid);
    if (backend.sync) await this.db.transaction((tx) => backend.sync!(tx, root, scope === 'all'));
    const entries = await store.listEntries(this.db, sid, { parent: scope === 'root' ? root.uuid : undefined, ownedBy: this.ownedFilter(p) }, q);
    return { root, entries };
  }

  async create(p: Principal, sid: string, parentUuid: string | undefined, input: EntryInput, owner: string | null): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    checkName(input.name);
    if (!parentUuid) this.permissions.require(p, 'documents', 'write');
    const parent = parentUuid ? await this.get(p, sid, parentUuid, 'write') : await this.root(sid);
    if (parent.type !== 'collection') throw methodNotAllowed('NOT_A_COLLECTION', `entry ${parent.uuid} is not a collection; entries can only be created in collections`);
    const row = draftEntry({
      uuid: randomUUID(), sid, parent: parent.uuid, name: input.name, type: input.type, metadata: input.metadata, creator: p.user, owner,
    });
    if (await store.nameTaken(this.db, sid, parent.uuid, input.name)) throw conflict('NAME_EXISTS', `"${input.name}" already exists in this collection`);
    const made = await backend.create(row, parent);
    try {
      const inserted = await store.insertEntry(this.db, {
        ...row, parent: parent.uuid, path: made.path ?? null, content: null,
      });
      // a backend that keeps files fills in what the new (empty) file looks like
      return (backend.refresh ? await backend.refresh(this.db, inserted!) : inserted) ?? inserted!;
    } catch (err) {
      await backend.remove({ ...row, path: made.path ?? null }).catch(() => {});
      translate(err);
    }
  }

  /** PUT: the record is replaced by `change` (metadata wholesale); PATCH: merged. */
  async update(p: Principal, sid: string, uuid: string, change: RecordChange, mode: 'replace' | 'merge'): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'write');
    if (entry.parent === null) throw conflict('ROOT_READONLY', 'the root collection cannot be changed');
    if (change.type !== undefined && change.type !== entry.type) {
      throw conflict('TYPE_IMMUTABLE', `entry ${uuid} is a ${entry.type}; its type cannot be changed`);
    }
    const name = change.name ?? entry.name;
    checkName(name);
    const metadata = mode === 'replace' ? (change.metadata ?? {}) : mergeMetadata(entry.metadata, change.metadata ?? {});
    const owner = change.owner === undefined ? entry.owner : change.owner;
    const parent = entry.parent;
    return this.db.transaction(async (tx) => {
      let path: string | undefined;
      if (name !== entry.name) {
        if (await store.nameTaken(tx, sid, parent, name)) throw conflict('NAME_EXISTS', `"${name}" already exists in this collection`);
        path = (await backend.rename(entry, name)).path;
        if (path !== undefined && entry.path) await store.rewritePaths(tx, sid, entry.path, path);
      }
      return store.updateRecord(tx, sid, uuid, { name, metadata, owner, path }).catch(translate);
    });
  }

  /** Tasks in status processing that use the entry or anything below it. */
  async activeTasks(sid: string, entry: EntryRow): Promise<TaskRef[]> {
    const ids = entry.type === 'collection' ? (await store.subtree(this.db, sid, entry.uuid)).map((e) => e.uuid) : [entry.uuid];
    return store.activeTasksUsing(this.db, ids);
  }

  async refuseIfInUse(sid: string, entry: EntryRow, what: string): Promise<void> {
    const tasks = await this.activeTasks(sid, entry);
    if (tasks.length > 0) {
      throw conflict('DOCUMENT_IN_USE', `${what}: the document is used by ${tasks.length} task(s) in status processing`, { tasks });
    }
  }

  async remove(p: Principal, sid: string, uuid: string, force: boolean): Promise<void> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'delete');
    if (entry.parent === null) throw new AppError(403, 'ROOT_READONLY', 'the root collection cannot be deleted');
    if (!force) await this.refuseIfInUse(sid, entry, 'cannot delete');
    await backend.remove(entry);
    await store.deleteEntry(this.db, sid, uuid);
  }

  async openContent(p: Principal, sid: string, uuid: string, range?: { start: number; end: number }): Promise<{ entry: EntryRow; stream: Readable }> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'read');
    if (entry.type !== 'document') throw notFound('NOT_A_DOCUMENT', `entry ${uuid} is a collection; it has no content`);
    if (entry.content_version === null) throw notFound('NO_CONTENT', `document ${uuid} has no content`);
    const stream = await backend.openContent(entry, range);
    if (!stream) throw notFound('NO_CONTENT', `the content of document ${uuid} is missing`);
    return { entry, stream };
  }

  async writeContent(p: Principal, sid: string, uuid: string, source: Readable, mimeType: string): Promise<EntryRow> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'write');
    if (entry.type !== 'document') throw notAcceptable('NOT_A_DOCUMENT', `entry ${uuid} is a collection; collections have no content`);
    if (!backend.contentWrite) throw notAcceptable('CONTENT_READONLY', `service "${sid}" does not allow content changes`);
    await this.refuseIfInUse(sid, entry, 'cannot change the content');
    const written = await backend.writeContent(entry, source, this.maxUploadBytes);
    const updated = await store.setContent(this.db, sid, uuid, { size: written.size, mimeType, sha256: written.sha256, version: written.sha256 });
    await this.requestPreview(updated);
    return updated;
  }

  async deleteContent(p: Principal, sid: string, uuid: string): Promise<void> {
    const { backend } = this.backend(sid);
    const entry = await this.get(p, sid, uuid, 'write');
    if (entry.type !== 'document') throw methodNotAllowed('NOT_A_DOCUMENT', `entry ${uuid} is a collection; it has no content`);
    if (!backend.contentDelete || !backend.deleteContent) {
      throw methodNotAllowed('CONTENT_DELETE_UNSUPPORTED', `service "${sid}" keeps content with every document; delete the document instead`);
    }
    await this.refuseIfInUse(sid, entry, 'cannot delete the content');
    await backend.deleteContent(entry);
    await store.setContent(this.db, sid, uuid, null);
  }

  /** Queues a preview for the entry's current content (no-op without content). */
  async requestPreview(entry: EntryRow): Promise<void> {
    if (entry.type !== 'document' || !entry.content_version) return;
    await this.queue.enqueue('preview.render', { sid: entry.sid, uuid: entry.uuid, version: entry.content_version });
  }

  /** Document ids (of any service) not used by a task in status processing. */
  async inactives(p: Principal, uuids: string[]): Promise<string[]> {
    this.permissions.require(p, 'documents', 'read');
    return store.inactiveOf(this.db, uuids);
  }

  canSee(p: Principal, entry: EntryRow, action: 'read' | 'write' | 'delete'): boolean {
    const scope = this.permissions.scope(p, 'documents', action);
    return scope === 'all' || (scope === 'own' && (entry.parent === null || isOwn(p, entry)));
  }

}
