/** Several api/worker processes start together against a new schema (compose, rolling deploys). */
import { it, expect } from 'vitest';
import pg from 'pg';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { migrate } from '../../src/storage/migrate.js';
import { MIGRATIONS } from '../../src/storage/migrations/index.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
it('four processes opening and migrating a new schema at once: no catalog collisions, each migration applied once', async () => {
  for (let round = 0; round < 5; round++) {
    const schema = uniqueName('race');
    const results = await Promise.allSettled(Array.from({ length: 4 }, async () => {
      const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
      try { return await migrate(db); } finally { await db.close(); }
    }));
    const c = new pg.Client({ connectionString: TEST_DATABASE_URL }); await c.connect(); await c.query(`DROP SCHEMA "${schema}" CASCADE`); await c.end();
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    expect(results.map((r) => (r as PromiseFulfilledResult<number[]>).value.length).sort()).toEqual([0, 0, 0, MIGRATIONS.length]);
  }
}, 60000);
