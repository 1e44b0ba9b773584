import type { Readable } from 'node:stream';
import type { BlobStore } from '../blobs/blob-store.js';
import type { Logger } from '../logging/logger.js';
import type { ServiceConfig } from '../config/schema.js';
import type { EntryRow } from '../areas/repository/entry.js';
import type { Sql } from '../storage/driver/database.js';

export const COMMAND_NAMES = ['copy', 'move', 'delete', 'import', 'preview'] as const;
export type CommandName = (typeof COMMAND_NAMES)[number];

/** What a service can do; the API answers 404 for anything not declared. */
export interface Capabilities {
  repository?: {
    /** Repository commands the service runs. */
    commands: readonly CommandName[];
    /** Whether DELETE .../content is supported (else 405). */
    contentDelete: boolean;
    /** Whether PUT .../content is supported (else 406). */
    contentWrite: boolean;
  };
  tasks?: { actions: readonly string[] };
  functions?: boolean;
  intake?: boolean;
}

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
 * bytes and the tree live and keeps the rows in step with them.
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

/** Shared runtime pieces a connector may use. */
export interface ConnectorContext {
  sid: string;
  config: ServiceConfig;
  dataDir: string;
  blobs: BlobStore;
  log: Logger;
}

/** A configured instance of a connector type: one `{sid}`. */
export interface Connector {
  readonly sid: string;
  readonly type: string;
  readonly capabilities: Capabilities;
  readonly repository?: RepositoryBackend;
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/** A connector type, registered once in `registry.ts`. */
export interface ConnectorType {
  readonly type: string;
  readonly description: string;
  /** Validates `options` and builds the instance; throws with a message naming the bad option. */
  create(ctx: ConnectorContext): Promise<Connector> | Connector;
}
