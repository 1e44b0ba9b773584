import { mkdirSync } from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import { runAfterCommit, type Database, type QueryResult, type Tx } from './database.js';
import { lockDirectory } from './dir-lock.js';

export interface PgliteOptions {
  /** Directory of the database files; undefined = in memory. */
  dir?: string;
  schema: string;
}

/**
 * Embedded PostgreSQL (WASM) in this process: single connection, same SQL.
 * A directory is locked for as long as it is open: a second process (or a
 * second open in this one) would keep its own copy of the data in memory and
 * the last to write its files would lose the other's writes, so it stops with
 * `DirectoryLockedError` naming the holder instead.
 */
export async function openPglite(opts: PgliteOptions): Promise<Database> {
  if (opts.dir) mkdirSync(opts.dir, { recursive: true });
  const lock = opts.dir ? await lockDirectory(opts.dir, 'the embedded database') : undefined;
  const db = new PGlite(opts.dir, { parsers: { [types.INT8]: (v: string) => Number(v) } });
  try {
    await db.waitReady;
    // the session settings of the server driver (postgres.ts): timestamps' text is ISO and UTC
    await db.exec(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"; SET search_path TO "${opts.schema}"; SET TimeZone TO 'UTC'; SET DateStyle TO ISO`);
  } catch (err) {
    await db.close().catch(() => {});
    await lock?.release();
    throw err;
  }
  const wrap = (res: { rows: unknown[]; affectedRows?: number }): QueryResult<never> => ({
    rows: res.rows as never[],
    rowCount: res.affectedRows ?? res.rows.length,
  });
  return {
    kind: 'pglite',
    query: async (text, params) => wrap(await db.query(text, params as unknown[] | undefined)),
    queryArrays: async (text, params) => (await db.query(text, params as unknown[] | undefined, { rowMode: 'array' })).rows as never[],
    exec: async (text) => {
      await db.exec(text);
    },
    async transaction(fn) {
      const committed: (() => void)[] = [];
      const result = await db.transaction(async (tx) => {
        const sql: Tx = {
          query: async (text, params) => wrap(await tx.query(text, params as unknown[] | undefined)),
          queryArrays: async (text, params) => (await tx.query(text, params as unknown[] | undefined, { rowMode: 'array' })).rows as never[],
          exec: async (text) => {
            await tx.exec(text);
          },
          afterCommit: (cb) => void committed.push(cb),
        };
        return fn(sql);
      });
      runAfterCommit(committed);
      return result;
    },
    // one connection: the session is the database itself
    session: (fn) => fn({
      query: async (text, params) => wrap(await db.query(text, params as unknown[] | undefined)),
      queryArrays: async (text, params) => (await db.query(text, params as unknown[] | undefined, { rowMode: 'array' })).rows as never[],
      exec: async (text) => {
        await db.exec(text);
      },
    }),
    async ping() {
      await db.query('SELECT 1');
    },
    // one process, one connection: nothing to lose, so never a reconnect (no `null`)
    listen: (channel, handler) => db.listen(channel, (payload) => {
      try {
        handler(payload);
      } catch {
        // the handler owns its errors
      }
    }),
    async close() {
      try {
        await db.close();
      } finally {
        await lock?.release();
      }
    },
  };
}
