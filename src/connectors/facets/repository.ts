import type { Readable } from 'node:stream';
import type { EntryRow } from '../../areas/repository/entry.js';
import type { Sql } from '../../storage/driver/database.js';

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

/**
 * The storage side of a repository connector. Entry records (names, metadata,
 * ownership) always live in the `entries` table; a backend decides where the
 * bytes and the tree live and keeps the rows in step with them. Database access
 * is only the transaction handed to `sync` and `refresh`.
 */
export interface RepositoryBackend {
  /** Brings the rows below `collection` in line with the backing store before a listing. */
  sync?(tx: Sql, collection: EntryRow, recursive: boolean): Promise<void>;
  /** Checks that the entry still exists in the backing store (undefined = gone; row removed). */
  refresh?(tx: Sql, entry: EntryRow): Promise<EntryRow | undefined>;
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
