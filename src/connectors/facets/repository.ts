import type { Readable } from 'node:stream';
import { AppError } from '../../errors/app-error.js';
import { textProblem } from '../../errors/input-errors.js';

/**
 * A repository entry as the repository area stores it (one row of
 * `entries`) and as every backend is handed it: the backend reads `path`,
 * `type`, `name` and the content columns, and says what changed through
 * return values or the `EntryRowsPort`, never by writing the row itself.
 */
export interface EntryRow {
  uuid: string;
  sid: string;
  parent: string | null;
  name: string;
  type: 'document' | 'collection';
  metadata: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
  created: Date;
  modified: Date;
  size: number | null;
  mime_type: string | null;
  sha256: string | null;
  content_version: string | null;
  path: string | null;
  preview_sha256: string | null;
  thumb_sha256: string | null;
  preview_of: string | null;
  preview_error: string | null;
}

/**
 * The one rule for entry names, applied wherever a name enters: create,
 * rename (PUT/PATCH), the `name` of copy, move and import, and the name an
 * import derives from its URL. Connectors may add limits of their own on top
 * (the filesystem: 255 UTF-8 bytes, names it reserves for temporary files).
 *
 * A name is 1 to 255 characters (Unicode code points), is not `.` or `..`,
 * and contains no `/` or `\`, no control character (C0 0x00-0x1f, DEL 0x7f,
 * C1 0x80-0x9f) and no lone surrogate (it could not be stored as UTF-8): the
 * shared text rule, `textProblem` in errors/input-errors.ts.
 */
/** The API path of a repository entry (what a task or list item names a document by). */
export const entryHref = (e: { sid: string; uuid: string }) => `/v1/services/${encodeURIComponent(e.sid)}/repo/${e.uuid}`;

export const NAME_MAX_CHARS = 255;

/** Why `name` is not a valid entry name, or undefined when it is. */
export function nameProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name === '.' || name === '..') return 'is a relative directory reference';
  if (name.includes('/') || name.includes('\\')) return 'contains a path separator ("/" or "\\")';
  const text = textProblem(name);
  if (text) return text;
  if ([...name].length > NAME_MAX_CHARS) return `is longer than ${NAME_MAX_CHARS} characters`;
  return undefined;
}

/** Throws 400 INVALID_NAME (with `details.name`, shortened) unless `name` is valid. */
export function assertValidName(name: string, what = 'the name'): void {
  const problem = nameProblem(name);
  if (problem) throw new AppError('INVALID_NAME', `${what} ${problem}`, { name: [...name].slice(0, 80).join('') });
}

export const COMMAND_NAMES = ['copy', 'move', 'delete', 'import', 'preview'] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

/** Where a backend keeps document bytes (store: blobs; filesystem: files). */
export interface WrittenContent {
  size: number;
  sha256: string;
  /** Relative path of the file, when the backend keeps files. */
  path?: string;
}

/**
 * Content written to a temporary place, not yet visible: `commit` puts it in
 * place (the service calls it under the entry's row lock, with the row as it
 * is then: renamed or moved meanwhile, the content follows it), `discard`
 * removes what `commit` did not take (a no-op after a commit).
 */
export interface StagedContent {
  size: number;
  sha256: string;
  commit(current?: EntryRow): Promise<void>;
  discard(): Promise<void>;
}

/** A child row as a sync compares it with what the backend holds. */
export type SyncChild = Pick<EntryRow, 'uuid' | 'name' | 'type' | 'size' | 'modified' | 'content_version'>;

/** A child row as a sync saw it: deleted only while it still has this name and type. */
export type SeenChild = Pick<EntryRow, 'uuid' | 'name' | 'type'>;

/** An object the backend holds that has no row yet (content fields null for a collection). */
export interface FoundEntry {
  name: string;
  type: 'document' | 'collection';
  /** Where the backend keeps it (relative path). */
  path: string;
  size: number | null;
  mimeType: string | null;
  contentVersion: string | null;
  created: Date;
  modified: Date;
}

/** A document whose content changed behind the service's back, as the backend sees it now. */
export interface ChangedContent {
  uuid: string;
  size: number;
  modified: Date;
  contentVersion: string;
  /** Taken only when the row has no media type yet. */
  mimeType: string;
}

/**
 * The port through which a backend whose tree can change behind the
 * database's back (filesystem) keeps the rows of `entries` in step with it.
 * The repository area writes `entries` alone; it hands this port to `sync`
 * and `refresh`, bound to one service and to the transaction they run in.
 * Every removal is conditional on what the backend saw, so a rename or move
 * through the API that holds the row locks meanwhile is waited for and kept.
 */
export interface EntryRowsPort {
  /** The rows directly below the collection `parent`. */
  children(parent: string): Promise<SyncChild[]>;
  /** The collections with a path directly below `parent` (as stored, including other syncs' rows). */
  childCollections(parent: string): Promise<{ uuid: string; path: string }[]>;
  /** The entry as stored now, or undefined. */
  get(uuid: string): Promise<EntryRow | undefined>;
  /** Rows for objects found below `parent`; a name another sync inserted meanwhile keeps that row. */
  add(parent: string, found: readonly FoundEntry[]): Promise<void>;
  /** Removes children of `parent` that still have the name and type seen. */
  remove(parent: string, seen: readonly SeenChild[]): Promise<void>;
  /** Removes the children of `parent` still below `path` (the directory `path` is gone). */
  removeChildrenBelow(parent: string, path: string): Promise<void>;
  /** Removes the entry while its row's path is still `path`; false when it moved meanwhile or is gone. */
  removeAt(uuid: string, path: string): Promise<boolean>;
  /** Records new content facts (the sha256 becomes unknown); the rows as updated. */
  updateContent(changes: readonly ChangedContent[]): Promise<EntryRow[]>;
}

/**
 * The storage side of a repository connector. Entry records (names, metadata,
 * ownership) always live in the `entries` table; a backend decides where the
 * bytes and the tree live and keeps the rows in step with them, through the
 * `EntryRowsPort` handed to `sync` and `refresh` (its only way to the rows).
 */
export interface RepositoryBackend {
  /**
   * The bytes are addressed by their hash (the blob store), not by the entry:
   * they may be written before the entry exists, so an intake creates a new
   * document with its content in one transaction. Such a backend keeps no
   * object per entry (`create`, `rename`, `move` do nothing): an intake's
   * document of a type without previews is then one `INSERT`.
   */
  readonly contentByHash?: boolean;
  /** Brings the rows below `collection` in line with the backing store before a listing. */
  sync?(rows: EntryRowsPort, collection: EntryRow, recursive: boolean): Promise<void>;
  /** Checks that the entry still exists in the backing store (undefined = gone; row removed). */
  refresh?(rows: EntryRowsPort, entry: EntryRow): Promise<EntryRow | undefined>;
  /** Creates the backing object for a new entry; returns its path when it has one. */
  create(entry: EntryRow, parent: EntryRow): Promise<{ path?: string }>;
  /** Renames the backing object; returns the new path. */
  rename(entry: EntryRow, newName: string): Promise<{ path?: string }>;
  /** Moves the backing object under another collection; returns the new path. */
  move(entry: EntryRow, target: EntryRow): Promise<{ path?: string }>;
  /** Copies one document's bytes for a copied entry; returns the copy's path. */
  copy(entry: EntryRow, target: EntryRow, name: string): Promise<{ path?: string }>;
  /** Removes the backing object (recursively for collections). */
  remove(entry: EntryRow): Promise<void>;
  writeContent(entry: EntryRow, source: Readable, maxBytes: number): Promise<WrittenContent>;
  /**
   * `writeContent` of an open file (`fd`, read from its start; the caller
   * keeps it open until this resolves), for backends that can copy a file
   * more cheaply than a stream (the blob store: off the main thread). Only
   * for a new document's content (`contentByHash`); optional.
   */
  writeFile?(entry: EntryRow, fd: number, maxBytes: number): Promise<WrittenContent>;
  /**
   * `writeContent` in two steps, for backends whose write replaces something
   * other requests can see (a file): the service commits under a row lock, so
   * a concurrent delete cannot be undone by a late write.
   */
  stageContent?(entry: EntryRow, source: Readable, maxBytes: number): Promise<StagedContent>;
  /** Opens the bytes, or undefined when the document has none. */
  openContent(entry: EntryRow, range?: { start: number; end: number }): Promise<Readable | undefined>;
  /** A local file path of the bytes, for renderers that need random access. */
  contentPath(entry: EntryRow): Promise<string | undefined>;
  deleteContent?(entry: EntryRow): Promise<void>;
}

/**
 * The `repository` facet: a backend plus what it declares. The API answers
 * from these declarations (404 `NO_COMMANDS` / `COMMAND_UNSUPPORTED`, 405 for
 * content deletion, 406 for content writes) before the backend is ever called.
 */
export interface RepositoryFacet extends RepositoryBackend {
  /** Repository commands the service runs; [] = none (404 `NO_COMMANDS`). */
  readonly commands: readonly CommandName[];
  /** Whether PUT .../content is supported (else 406). */
  readonly contentWrite: boolean;
  /** Whether DELETE .../content is supported (else 405); true requires `deleteContent`. */
  readonly contentDelete: boolean;
}
