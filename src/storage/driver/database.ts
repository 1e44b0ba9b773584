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
  /** Runs a script of several statements without parameters (migrations). */
  exec(text: string): Promise<void>;
}

export interface Database extends Sql {
  readonly kind: 'postgres' | 'pglite';
  /** Runs `fn` in one transaction; rolls back when it throws. */
  transaction<T>(fn: (tx: Sql) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` on one connection outside any transaction: session-level
   * advisory locks, and statements that refuse a transaction block
   * (`CREATE INDEX CONCURRENTLY`). `fn` must leave no transaction open.
   */
  session<T>(fn: (conn: Sql) => Promise<T>): Promise<T>;
  /** Cheap round trip for readiness checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A PostgreSQL error surfaced by either driver (SQLSTATE in `code`). */
export interface SqlError extends Error {
  code?: string;
  constraint?: string;
}

export const isSqlError = (err: unknown, sqlstate: string): boolean =>
  err instanceof Error && (err as SqlError).code === sqlstate;
