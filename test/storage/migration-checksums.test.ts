import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/driver/database.js';
import { openPostgres } from '../../src/storage/driver/postgres.js';
import { MigrationEditedError, migrate } from '../../src/storage/migrate.js';
import { MIGRATIONS, type Migration } from '../../src/storage/migrations/index.js';
import { bothDrivers, dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { killAll, startProcess } from '../helpers/process.js';
import { dropQueues } from '../helpers/runtime.js';

/** Each applied migration's checksum is recorded; an edited shipped migration stops the start. */

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');
const expected = (migrations: readonly Migration[]) => migrations.map((m) => ({ id: m.id, checksum: sha256(m.sql) }));
const recorded = async (db: Database) =>
  (await db.query<{ id: number; checksum: string | null }>('SELECT id, checksum FROM schema_migrations ORDER BY id')).rows;

/** The shipped list with migration `id`'s text changed (as an edit of its file would). */
const editedList = (id: number, edit: (m: Migration) => Partial<Migration>): Migration[] =>
  MIGRATIONS.map((m) => (m.id === id ? { ...m, ...edit(m) } : m));
const addIndex = (m: Migration) => ({ sql: `${m.sql}CREATE INDEX task_items_job ON task_items (job_id);\n` });

/** A new migration after the shipped ones: never applied while an applied one does not match. */
const pending: Migration = { id: 900, name: 'pending-table', sql: 'CREATE TABLE checksum_pending (a int)' };
const pendingApplied = async (db: Database) =>
  (await db.query<{ t: string | null }>(`SELECT to_regclass('checksum_pending')::text AS t`)).rows[0]!.t !== null;

for (const [name, open] of bothDrivers({ migrate: false, poolSize: 2 })) {
  describe(`migration checksums on ${name}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    beforeAll(async () => {
      ({ db, drop } = await open());
    });
    afterAll(() => drop());

    it('a fresh migrate records the sha256 of each migration\'s SQL', async () => {
      expect(await migrate(db)).toEqual(MIGRATIONS.map((m) => m.id));
      expect(await recorded(db)).toEqual(expected(MIGRATIONS));
    }, 120_000); // the whole schema in the WASM engine: slow on a loaded machine

    it('a second migrate with the same migrations passes and applies nothing', async () => {
      expect(await migrate(db)).toEqual([]);
      expect(await recorded(db)).toEqual(expected(MIGRATIONS));
    });

    it('an applied migration edited: the migrate fails naming it and what to do, and changes nothing', async () => {
      const err = await migrate(db, [...editedList(7, addIndex), pending]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(MigrationEditedError);
      expect((err as Error).message).toBe(
        'migration 7 (task-item-states) was edited after it was applied to this database: its SQL no longer matches '
        + 'the checksum recorded when it ran. Restore the migration\'s shipped text (src/storage/migrations/) and put the change in a new migration.');
      expect(await pendingApplied(db)).toBe(false);
      expect(await recorded(db)).toEqual(expected(MIGRATIONS));
      // a one-character edit counts as much as a new statement
      await expect(migrate(db, editedList(17, (m) => ({ sql: m.sql.replace('listing text;', 'listing  text;') }))))
        .rejects.toThrow(/^migration 17 \(print-job-listing\) was edited after it was applied/);
      // several at once are named together; an id reused under another name says what it was recorded as
      await expect(migrate(db, editedList(1, addIndex).map((m) => (m.id === 9 ? { ...m, name: 'printing', sql: `${m.sql} ` } : m))))
        .rejects.toThrow(/^migrations 1 \(init\), 9 \(printing, recorded as print\) were edited after they were applied/);
      // the failed run let go of the lock: the shipped list goes on as before
      expect(await migrate(db, [...MIGRATIONS, pending])).toEqual([900]);
      expect(await recorded(db)).toEqual(expected([...MIGRATIONS, pending]));
      // a recorded migration no longer in the list (dropped from the code) is not checked
      expect(await migrate(db)).toEqual([]);
    });

    it('a database migrated before checksums gets them recorded on its first start (trust on first use), then held', async () => {
      // the bookkeeping table as it was before checksums
      await db.query('ALTER TABLE schema_migrations DROP COLUMN checksum');
      expect(await migrate(db, [...MIGRATIONS, pending])).toEqual([]);
      expect(await recorded(db)).toEqual(expected([...MIGRATIONS, pending]));
      await expect(migrate(db, [...editedList(7, addIndex), pending])).rejects.toThrow(/^migration 7 \(task-item-states\) was edited/);
      // one row without a checksum among recorded ones: only that one is filled in
      await db.query('UPDATE schema_migrations SET checksum = NULL WHERE id = 900');
      expect(await migrate(db, [...MIGRATIONS, pending])).toEqual([]);
      expect(await recorded(db)).toEqual(expected([...MIGRATIONS, pending]));
    });
  });
}

describe('a start against a database whose applied migration was edited', () => {
  const schema = uniqueName('edited');
  const prefix = uniqueName('edited');
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-edited-'));
    const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      await migrate(db);
      // as if migration 17's file had been edited after this database applied it
      await db.query(`UPDATE schema_migrations SET checksum = $1 WHERE id = 17`, [sha256('what 017 said before')]);
    } finally {
      await db.close();
    }
  });
  afterAll(async () => {
    killAll();
    await dropSchema(schema);
    await dropQueues(prefix);
    await rm(dir, { recursive: true, force: true });
  });

  it('the server entrypoint exits with the migration named on stderr and in the log', async () => {
    const config = path.join(dir, 'config.yaml');
    await writeFile(config, ['database:', `  url: ${TEST_DATABASE_URL}`, `  schema: ${schema}`, 'redis:', `  prefix: ${prefix}`, ''].join('\n'));
    const p = await startProcess('server', { DATA_DIR: path.join(dir, 'data'), CONFIG: config });
    expect(await p.exited).toBe(1);
    const said = 'migration 17 (print-job-listing) was edited after it was applied to this database';
    // plain text on stderr, whatever the log level
    expect(p.logs).toContain(
      `start failed: ${said}: its SQL no longer matches the checksum recorded when it ran. `
      + 'Restore the migration\'s shipped text (src/storage/migrations/) and put the change in a new migration.');
    // and the structured log's fatal line
    const fatal = p.logs.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: string; msg: string; err?: { message: string } })
      .find((l) => l.level === 'fatal');
    expect(fatal).toMatchObject({ msg: 'start failed', err: { message: expect.stringContaining(said) as unknown } });
    // nothing was overwritten: the next start fails the same way until the text is restored
    const db = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 1 });
    try {
      expect((await db.query('SELECT checksum FROM schema_migrations WHERE id = 17')).rows).toEqual([{ checksum: sha256('what 017 said before') }]);
    } finally {
      await db.close();
    }
  }, 120_000);
});
