import { afterAll, afterEach, beforeAll, beforeEach, expect, it } from 'vitest';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import type { Database } from '../../src/storage/driver/database.js';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { eventually } from '../helpers/runtime.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Fault: PostgreSQL goes away under a transaction or a session (issue 20,
 * found by the print fault test: a worker process died of it during an
 * outage). The pool listens for errors of idle clients only; a client taken
 * out emitted 'error' with nobody listening, an uncaught exception that ends
 * the process. Now the statement rejects, nothing else happens, and the
 * driver works again once the database is back. The connection is cut by a
 * proxy; the shared server keeps running.
 */
const schema = uniqueName('pgloss');
let proxy: TcpProxy;
let db: Database;
const uncaught: unknown[] = [];
const record = (err: unknown) => void uncaught.push(err);

beforeAll(async () => {
  proxy = await TcpProxy.start(TEST_DATABASE_URL);
  db = await openPostgres({ url: proxy.url(TEST_DATABASE_URL), schema, poolSize: 2 });
});
afterAll(async () => {
  await db?.close().catch(() => {});
  await proxy?.close();
  await dropSchema(schema);
});
beforeEach(() => {
  uncaught.length = 0;
  process.on('uncaughtException', record);
});
afterEach(() => {
  process.off('uncaughtException', record);
});

const backAgain = async () => {
  await proxy.restore();
  await eventually(async () => ((await db.query<{ n: number }>('SELECT 1 AS n').catch(() => undefined))?.rows[0]?.n === 1 ? true : undefined), 20_000, 100);
};

it('fault: the connection of a transaction is cut between two statements: the next one rejects, no uncaught error, the driver works once the database is back', async () => {
  await expect(db.transaction(async (tx) => {
    await tx.query('SELECT 1');
    await proxy.cut();
    // the reset reaches the client while it waits for nothing (an idle transaction)
    await new Promise((r) => setTimeout(r, 200));
    await tx.query('SELECT 2');
  })).rejects.toThrow();
  await new Promise((r) => setTimeout(r, 200));
  expect(uncaught).toEqual([]);
  await backAgain();
});

it('fault: the connection of a session is cut while a statement runs: it rejects, no uncaught error, the driver works once the database is back', async () => {
  await expect(db.session(async (s) => {
    const slow = s.query('SELECT pg_sleep(2)');
    await new Promise((r) => setTimeout(r, 200));
    await proxy.cut();
    await slow;
  })).rejects.toThrow();
  await new Promise((r) => setTimeout(r, 200));
  expect(uncaught).toEqual([]);
  await backAgain();
});
