import pg from 'pg';
import type { Database, QueryResult, Sql } from './database.js';

// bigint counts and sizes fit comfortably in a double here; keep them numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));

export interface PostgresOptions {
  url: string;
  schema: string;
  poolSize: number;
}

/** PostgreSQL server through a `pg` pool pinned to one schema. */
export async function openPostgres(opts: PostgresOptions): Promise<Database> {
  // The schema must exist before pooled connections put it on their search_path.
  const setup = new pg.Client({ connectionString: opts.url });
  await setup.connect();
  try {
    await setup.query(`CREATE SCHEMA IF NOT EXISTS "${opts.schema}"`);
  } finally {
    await setup.end();
  }
  const pool = new pg.Pool({
    connectionString: opts.url,
    max: opts.poolSize,
    options: `-c search_path="${opts.schema}"`,
  });
  // An idle client that loses its server must not take the process down.
  pool.on('error', () => {});
  const run = async <T>(client: pg.Pool | pg.PoolClient, text: string, params?: readonly unknown[]): Promise<QueryResult<T>> => {
    const res = await client.query(text, params as unknown[] | undefined);
    return { rows: res.rows as T[], rowCount: res.rowCount ?? 0 };
  };
  return {
    kind: 'postgres',
    query: (text, params) => run(pool, text, params),
    exec: async (text) => {
      await pool.query(text);
    },
    async transaction(fn) {
      const client = await pool.connect();
      const tx: Sql = {
        query: (text, params) => run(client, text, params),
        exec: async (text) => {
          await client.query(text);
        },
      };
      try {
        await client.query('BEGIN');
        const result = await fn(tx);
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
    async ping() {
      await pool.query('SELECT 1');
    },
    close: () => pool.end(),
  };
}
