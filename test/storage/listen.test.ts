import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/driver/database.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { bothDrivers } from '../helpers/databases.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import pg from 'pg';
import { eventually } from '../helpers/runtime.js';

/** `Database.listen` on both drivers: delivered at commit, never for a rollback. */
const drivers = bothDrivers({ migrate: false, poolSize: 4 });

for (const [name, open] of drivers) {
  describe(`listen on ${name}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    beforeAll(async () => {
      ({ db, drop } = await open());
    });
    afterAll(async () => drop());

    it('hears a NOTIFY when its transaction commits, not before and not after a rollback', async () => {
      const channel = uniqueName('ch');
      const heard: (string | null)[] = [];
      const stop = await db.listen(channel, (p) => heard.push(p));
      try {
        await db.transaction(async (tx) => {
          await tx.query('SELECT pg_notify($1, $2)', [channel, 'first']);
          await new Promise((r) => setTimeout(r, 200));
          expect(heard).toEqual([]); // not yet committed
        });
        await eventually(async () => (heard.includes('first') ? true : undefined), 10_000, 10);
        await db.transaction(async (tx) => {
          await tx.query('SELECT pg_notify($1, $2)', [channel, 'rolled-back']);
          throw new Error('roll back');
        }).catch(() => undefined);
        await db.query('SELECT pg_notify($1, $2)', [channel, 'second']);
        await eventually(async () => (heard.includes('second') ? true : undefined), 10_000, 10);
        expect(heard).toEqual(['first', 'second']);
      } finally {
        await stop();
      }
      await db.query('SELECT pg_notify($1, $2)', [channel, 'after stop']);
      await new Promise((r) => setTimeout(r, 300));
      expect(heard).toEqual(['first', 'second']);
    });

    it('afterCommit callbacks run once the transaction committed, never after a rollback', async () => {
      const ran: string[] = [];
      await db.transaction(async (tx) => {
        tx.afterCommit(() => ran.push('committed'));
        await tx.query('SELECT 1');
        expect(ran).toEqual([]);
      });
      await db.transaction(async (tx) => {
        tx.afterCommit(() => ran.push('rolled back'));
        throw new Error('roll back');
      }).catch(() => undefined);
      // a throwing callback does not turn a committed transaction into an error
      await expect(db.transaction(async (tx) => {
        tx.afterCommit(() => {
          throw new Error('callback');
        });
        return 'ok';
      })).resolves.toBe('ok');
      expect(ran).toEqual(['committed']);
    });

    it('refuses a channel name that is not a plain identifier', async () => {
      await expect(db.listen('bad"; DROP TABLE x; --', () => {})).rejects.toThrow();
    });
  });
}

describe('listen on postgres: a lost connection', () => {
  it('is replaced; the handler hears null (notifications may be lost), then hears again', async () => {
    const schema = uniqueName('ls');
    const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
    const admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    const channel = uniqueName('ch');
    const heard: (string | null)[] = [];
    const stop = await db.listen(channel, (p) => heard.push(p));
    try {
      const { rowCount } = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = $1', [`LISTEN ${channel}`]);
      expect(rowCount).toBe(1);
      await eventually(async () => (heard.includes(null) ? true : undefined), 30_000, 20);
      await db.query('SELECT pg_notify($1, $2)', [channel, 'back']);
      await eventually(async () => (heard.includes('back') ? true : undefined), 10_000, 10);
      expect(heard).toEqual([null, 'back']);
    } finally {
      await stop();
      await db.close();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    }
  });
});
