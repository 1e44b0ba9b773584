import { mkdirSync } from 'node:fs';
import { PGlite, types } from '@electric-sql/pglite';
import { runAfterCommit, type Database, type QueryResult, type Tx } from './database.js';

export interface PgliteOptions {
  /** Directory of the database files; undefined = in memory. */
  dir?: string;
  schema: string;
}

/** Embedded PostgreSQL (WASM) in this process: single connection, same SQL. */
export async function openPglite(opts: PgliteOptions): Promise<Database> {
  if (opts.dir) mkdirSync(opts.dir, { recursive: true });
  const db = new PGlite(opts.dir, { parsers: { [types.INT8]: (v: string) => Number(v) } });
  await db.waitReady;
  // the session settings of the server driver (postgres.ts): timestamps' text is ISO and UTC
  await db.exec(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"; SET search_path TO "${opts.schema}"; SET TimeZone TO 'UTC'; SET DateStyle TO ISO`);
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
    close: () => db.close(),
  };
}
