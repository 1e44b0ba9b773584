import pg from 'pg';
import { runAfterCommit, type Database, type QueryResult, type Tx } from './database.js';
import { pgListen } from './pg-listener.js';
import { pgHoldLock } from './pg-session-lock.js';
import { APPLICATION_NAME } from './application-name.js';

// bigint counts and sizes fit comfortably in a double here; keep them numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// Sessions run in UTC with DateStyle ISO (see `options` below, whatever the
// server's defaults), so timestamptz arrives as
// "2026-11-22 04:17:47.44+00"; the engine's ISO parser is several times faster
// than the generic one (timestamps are on every listed row).
pg.types.setTypeParser(pg.types.builtins.TIMESTAMPTZ, (v) => new Date(`${v.replace(' ', 'T')}${/[+-]\d\d$/.test(v) ? ':00' : ''}`));

// Any constant; the same in every process of this product.
const SCHEMA_LOCK = 727_000;

export interface PostgresOptions {
  url: string;
  schema: string;
  poolSize: number;
}

/**
 * A pool client taken out for a transaction or a session. The pool listens
 * for errors of idle clients only: a taken client whose connection breaks
 * (the server gone, the connection reset) emits 'error' besides failing its
 * query, and an 'error' nobody listens to ends the process (a worker died
 * that way when PostgreSQL went away under a transaction). Each client gets
 * one listener for its life; the failed query still rejects, and a broken
 * client is no longer queryable, so the pool drops it at release.
 */
const guarded = new WeakSet<pg.PoolClient>();
async function takeClient(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  if (!guarded.has(client)) {
    guarded.add(client);
    client.on('error', () => {});
  }
  return client;
}

/** PostgreSQL server through a `pg` pool pinned to one schema. */
export async function openPostgres(opts: PostgresOptions): Promise<Database> {
  // The schema must exist before pooled connections put it on their search_path.
  const setup = new pg.Client({ connectionString: opts.url, application_name: APPLICATION_NAME });
  setup.on('error', () => {}); // a failed statement rejects; the event alone must not end the process
  await setup.connect();
  try {
    // serialized with other processes starting at the same time (see migrate.ts)
    await setup.query('BEGIN');
    await setup.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK]);
    await setup.query(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"`);
    await setup.query('COMMIT');
  } finally {
    await setup.end();
  }
  const pool = new pg.Pool({
    connectionString: opts.url,
    application_name: APPLICATION_NAME,
    max: opts.poolSize,
    options: `-c search_path="${opts.schema}" -c TimeZone=UTC -c DateStyle=ISO`,
  });
  // An idle client that loses its server must not take the process down.
  pool.on('error', () => {});
  // Statements are prepared once per connection and their plans reused (listings
  // run the same few statements all day). Bounded: past the limit, text that was
  // never seen runs unnamed, so ad-hoc filter combinations cannot grow server memory.
  const names = new Map<string, string>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (!name && names.size < 500) {
      name = `wcr${names.size}`;
      names.set(text, name);
    }
    return name;
  };
  const run = async <T>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly unknown[]): Promise<QueryResult<T>> => {
    const res = await client.query({ name: params && params.length > 0 ? nameOf(text) : undefined, text, values: params as unknown[] | undefined });
    return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
  };
  const arrays = async <T>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly unknown[]): Promise<T[]> => {
    const res = await client.query({ name: params && params.length > 0 ? nameOf(text) : undefined, text, values: params as unknown[] | undefined, rowMode: 'array' });
    return res.rows as T[];
  };
  const listeners = new Set<() => Promise<void>>();
  return {
    kind: 'postgres',
    query: (text, params) => run(pool, text, params),
    queryArrays: (text, params) => arrays(pool, text, params),
    exec: async (text) => {
      await pool.query(text);
    },
    async transaction(fn) {
      const client = await takeClient(pool);
      const committed: (() => void)[] = [];
      const tx: Tx = {
        query: (text, params) => run(client, text, params),
        queryArrays: (text, params) => arrays(client, text, params),
        exec: async (text) => {
          await client.query(text);
        },
        afterCommit: (cb) => void committed.push(cb),
        copyFrom: (statement, data) => copyIn(client, statement, data),
      };
      try {
        await client.query('BEGIN');
        const result = await fn(tx);
        await client.query('COMMIT');
        runAfterCommit(committed);
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async session(fn) {
      const client = await takeClient(pool);
      let broken = false;
      try {
        return await fn({
          query: (text, params) => run(client, text, params),
          queryArrays: (text, params) => arrays(client, text, params),
          exec: async (text) => {
            await client.query(text);
          },
        });
      } catch (err) {
        broken = true; // a connection left mid-transaction or holding session locks must not go back to the pool
        throw err;
      } finally {
        client.release(broken);
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    async listen(channel, handler) {
      const stop = await pgListen(opts.url, channel, handler);
      const once = async () => {
        listeners.delete(once);
        await stop();
      };
      listeners.add(once);
      return once;
    },
    async holdLock(lockClass, key, events) {
      const lock = await pgHoldLock(opts.url, lockClass, key, events);
      if (!lock) return undefined;
      const once = async () => {
        listeners.delete(once);
        await lock.release();
      };
      listeners.add(once);
      return { held: () => lock.held(), release: once };
    },
    // a listener's or a held lock's own connection would otherwise outlive the pool (and keep the process alive)
    async close() {
      await Promise.all([...listeners].map((stop) => stop()));
      await pool.end();
    },
  };
}

/**
 * `COPY … FROM STDIN` over a pool client, as a pg "submittable" (the protocol
 * pg-copy-streams speaks, for one buffer): send the statement, answer the
 * server's CopyInResponse with the data and CopyDone, resolve at
 * ReadyForQuery with the row count of CommandComplete. An error (a bad row)
 * rejects with pg's error, SQLSTATE in `code`, for `sql-errors.ts`; the
 * client stays usable (its next statement waits for ReadyForQuery).
 */
export function copyIn(client: pg.PoolClient | pg.Client, statement: string, data: string | Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    let rows = 0;
    const submittable = {
      submit(connection: { query(text: string): void }) {
        connection.query(statement);
      },
      handleCopyInResponse(connection: { sendCopyFromChunk(b: Buffer): void; endCopyFrom(): void }) {
        connection.sendCopyFromChunk(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
        connection.endCopyFrom();
      },
      handleCommandComplete(msg: { text?: string }) {
        rows = Number(/(\d+)$/.exec(msg.text ?? '')?.[1] ?? 0);
      },
      // pg drops a failed statement before ReadyForQuery and reports only here
      handleError(err: Error) {
        reject(err);
      },
      handleReadyForQuery() {
        resolve(rows);
      },
      // pg calls these for other statements; a COPY answers none of them
      handleRowDescription() {},
      handleDataRow() {},
      handlePortalSuspended() {},
      handleEmptyQuery() {},
      handleCopyData() {},
    };
    (client as unknown as { query(s: unknown): unknown }).query(submittable);
  });
}
