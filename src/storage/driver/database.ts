/**
 * The storage seam: one SQL interface with two drivers (PostgreSQL server via
 * `pg`, embedded PGlite). Both speak the same SQL and run the same migrations,
 * so everything above this file is driver-agnostic.
 */
export interface QueryResult<T> {
  rows: T[];
  rowCount: number;
}

export interface Sql {
  query<T = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<QueryResult<T>>;
  /**
   * Rows as arrays in column order, not objects (`rowMode: 'array'`): for
   * listings that write the values straight into their JSON. Select text
   * (`col::text`) to receive PostgreSQL's text as is, without type parsing.
   */
  queryArrays<T extends unknown[] = unknown[]>(text: string, params?: readonly unknown[]): Promise<T[]>;
  /** Runs a script of several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
}

/** The statements of one transaction. */
export interface Tx extends Sql {
  /** Calls `fn` once the transaction has committed (never after a rollback); its errors are ignored. */
  afterCommit(fn: () => void): void;
  /**
   * Runs `COPY <table> (<columns>) FROM STDIN` with `data` (a string, or its
   * UTF-8 bytes) in COPY's text format (tab-separated, `\N` for null, one row per line); resolves with the
   * number of rows. Bulk loads only; drivers without it (PGlite) leave it out
   * and callers fall back to multi-row INSERTs.
   */
  copyFrom?(statement: string, data: string | Buffer): Promise<number>;
}

/** True when `sql` is a transaction (it has `afterCommit`), not the autocommitting database. */
export const isTx = (sql: Sql): sql is Tx => typeof (sql as Partial<Tx>).afterCommit === 'function';

export interface Database extends Sql {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction; rolls back when it throws. */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on one connection outside any transaction: session-level
   * advisory locks, and statements that refuse a transaction block
   * (`CREATE INDEX CONCURRENTLY`). `fn` must leave no transaction open.
   */
  session<T>(fn: (conn: Sql) => Promise<T>): Promise<T>;
  /** Cheap round trip for readiness checks. */
  ping(): Promise<void>;
  /**
   * Calls `handler` with the payload of every NOTIFY on `channel` (a plain
   * lower-case identifier), delivered when the notifying transaction commits.
   * The connection it listens on reconnects by itself; after a reconnect the
   * handler is called once with `null`, since notifications sent meanwhile are
   * lost. Resolves once listening; the returned function stops it.
   */
  listen(channel: string, handler: (payload: string | null) => void): Promise<() => Promise<void>>;
  /**
   * Holds a session-level advisory lock (`lockClass`, `hashtext(key)`) on a
   * connection of its own for as long as the process lives: freed at once
   * when the process dies, kept while it is slow or stopped (a worker's
   * liveness witness, `src/worker/liveness-store.ts`). Undefined when another
   * session holds the key. A lost connection is replaced and the lock taken
   * again (`events`). PostgreSQL only: PGlite is one process.
   */
  holdLock?(lockClass: number, key: string, events?: HeldLockEvents): Promise<HeldLock | undefined>;
  close(): Promise<void>;
}

/**
 * Longest pause of a held lock whose connection was lost before it tries to
 * take the lock again (`Database.holdLock`): short, so that a live holder
 * has it back within about a second of the database's return, well inside
 * the time a watcher must see it free before it calls the holder dead
 * (src/worker/takeover.ts).
 */
export const HELD_LOCK_RETAKE_MAX_MS = 1000;

/** A session-level advisory lock held on a connection of its own (`Database.holdLock`). */
export interface HeldLock {
  /** Whether the lock is held now (false while the connection is lost and being replaced). */
  held(): boolean;
  /** Releases the lock and closes its connection. */
  release(): Promise<void>;
}

/** What the holder hears about its lock after it was first taken. */
export interface HeldLockEvents {
  /** The connection was lost: the lock is free for anyone until `onHeld`. */
  onLost?(err: unknown): void;
  /** Taken again on a new connection after a loss. */
  onHeld?(): void;
  /** A new connection could not take it again (another session holds the key); tried again with backoff. */
  onRefused?(): void;
}

/** A PostgreSQL error surfaced by either driver (SQLSTATE in `code`). */
export interface SqlError extends Error {
  code?: string;
  constraint?: string;
}

/** Runs after-commit callbacks; one that throws must not fail the committed transaction. */
export function runAfterCommit(fns: readonly (() => void)[]): void {
  for (const fn of fns) {
    try {
      fn();
    } catch {
      // the transaction is committed; a callback owns its own errors
    }
  }
}

