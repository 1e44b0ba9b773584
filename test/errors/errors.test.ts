import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError, statusOf } from '../../src/errors/app-error.js';
import { PRINT_STATUSES } from '../../src/errors/print-statuses.js';
import { translateSqlError } from '../../src/errors/sql-errors.js';
import { WORKFLOW_STATUSES } from '../../src/errors/workflow-statuses.js';
import type { Database } from '../../src/storage/driver/database.js';
import { openTestPostgres } from '../helpers/databases.js';

describe('one table per API maps codes to statuses', () => {
  it('a code answers with its workflow status; the print API overrides only what it lists', () => {
    const e = new AppError('ENTRY_NOT_FOUND', 'x');
    expect(statusOf(e)).toBe(404);
    expect(statusOf(e, 'print')).toBe(404);
    const state = new AppError('INVALID_STATE', 'x');
    expect(statusOf(state, 'workflow')).toBe(409);
    expect(statusOf(state, 'print')).toBe(412);
  });

  it('every status in both tables is an HTTP error status', () => {
    for (const table of [WORKFLOW_STATUSES, PRINT_STATUSES]) {
      for (const status of Object.values(table)) expect(status >= 400 && status <= 599).toBe(true);
    }
  });

  it('a prototype name is no code of either table (a code made up at run time is a server fault)', () => {
    expect(statusOf(new AppError('toString' as never, 'x'), 'print')).toBe(500);
    expect(statusOf(new AppError('constructor' as never, 'x'))).toBe(500);
  });
});

/** Real PostgreSQL errors, provoked on a migrated schema, become domain errors with plain messages. */
describe('SQL errors are translated in one place', () => {
  let db: Database;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await openTestPostgres({ poolSize: 2 }));
  });
  afterAll(async () => {
    await drop();
  });

  const failing = async (sql: string, params: unknown[] = []) => {
    try {
      await db.query(sql, params);
    } catch (err) {
      return err;
    }
    throw new Error(`no error from ${sql}`);
  };
  const insert = `INSERT INTO entries (uuid, sid, parent, name, type, metadata, creator) VALUES ($1, 's', $2, $3, 'document', '{}', 'u')`;

  it('unique name in a collection -> NAME_EXISTS; parent gone -> ENTRY_NOT_FOUND; bad regex -> INVALID_FILTER; NUL -> INVALID_CHARACTER', async () => {
    await db.query(`INSERT INTO entries (uuid, sid, parent, name, type, metadata, creator) VALUES ('00000000-0000-4000-8000-000000000001', 's', NULL, '', 'collection', '{}', 'u')`);
    await db.query(insert, ['00000000-0000-4000-8000-000000000002', '00000000-0000-4000-8000-000000000001', 'a']);
    const cases: [unknown, string][] = [
      [await failing(insert, ['00000000-0000-4000-8000-000000000003', '00000000-0000-4000-8000-000000000001', 'a']), 'NAME_EXISTS'],
      [await failing(insert, ['00000000-0000-4000-8000-000000000004', '00000000-0000-4000-8000-00000000dead', 'b']), 'ENTRY_NOT_FOUND'],
      [await failing("SELECT 'x' ~ $1", ['a{99999}']), 'INVALID_FILTER'],
      [await failing('SELECT $1::text', ['a\u0000b']), 'INVALID_CHARACTER'],
    ];
    for (const [err, code] of cases) {
      const t = translateSqlError(err);
      expect(t, String(err)).toBeInstanceOf(AppError);
      expect(t!.code).toBe(code);
      // PostgreSQL's own words never pass through
      expect(t!.message).not.toMatch(/duplicate key|violates|invalid regular expression|0x00|SQLSTATE/i);
    }
  });

  it('anything else is left alone (an internal error, logged whole)', async () => {
    expect(translateSqlError(await failing('SELECT * FROM no_such_table'))).toBeUndefined();
    expect(translateSqlError(new Error('plain'))).toBeUndefined();
    expect(translateSqlError('not an error')).toBeUndefined();
  });
});
