import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/driver/database.js';
import { AppError } from '../../src/errors/app-error.js';
import { throwSqlError } from '../../src/errors/sql-errors.js';
import { fieldMap } from '../../src/query/fields.js';
import { parseListQuery } from '../../src/query/list-query.js';
import { toSql } from '../../src/query/to-sql.js';
import { field, text, type Expr, type Sort, type Value } from '../../src/query/tree.js';
import { bothDrivers } from '../helpers/databases.js';

/**
 * The translator runs its SQL on both drivers: every case executes the
 * generated statement against real rows and checks which rows come back.
 */
const drivers = bothDrivers({ migrate: false, poolSize: 2 });

const MAP = fieldMap({
  name: { sql: 'name', type: 'text' },
  size: { sql: 'size', type: 'number' },
  created: { sql: 'created', type: 'date' },
  done: { sql: 'done', type: 'boolean' },
  id: { sql: 'id', type: 'text' },
  metadata: { sql: 'metadata', type: 'json' },
}, 'metadata');
const STRICT = fieldMap({ name: { sql: 'name', type: 'text' }, data: { sql: 'metadata', type: 'json' } });

/** Expected names in bytewise order (the tiebreak), whatever the database's collation. */
const C = (names: string[]) => [...names].sort();

const ROWS: [string, number | null, string, boolean, Record<string, unknown>][] = [
  ['alpha', 10, '2024-01-01T00:00:00Z', true, { n: 5, tag: 'x', when: '2024-03-01T12:00:00Z', ok: true, deep: { k: 'v1' }, note: 'hi' }],
  ['beta', 200, '2024-02-01T00:00:00Z', false, { n: 40, tag: 'y', when: '2024-03-01T14:00:00+02:00', ok: false, deep: { k: 'v2' } }],
  ['gamma', null, '2024-03-01T00:00:00Z', false, { n: '5', tag: 'x', when: 'not a date', note: null }],
  ['100%_sure', 3, '2024-04-01T00:00:00Z', true, { n: 100.5, tag: 'Z', when: '2024-02-30', pct: '50%' }],
  ['back\\slash', 7, '2024-05-01T00:00:00Z', true, { tag: 'x_y', when: '2024-03-01' }],
  ['Delta', 12, '2024-06-01T10:30:00Z', false, { n: 12, tag: 'x%y', arr: [1, 2], when: 5 }],
];

for (const [driver, open] of drivers) {
  describe(`query tree to SQL on ${driver}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    beforeAll(async () => {
      ({ db, drop } = await open());
      await db.exec(`CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, size bigint, created timestamptz NOT NULL,
        done boolean NOT NULL, metadata jsonb NOT NULL DEFAULT '{}'); CREATE TABLE empty_items (LIKE items)`);
      for (const [name, size, created, done, metadata] of ROWS) {
        await db.query('INSERT INTO items (name, size, created, done, metadata) VALUES ($1, $2, $3, $4, $5)', [name, size, created, done, JSON.stringify(metadata)]);
      }
    });
    afterAll(() => drop());

    /** Names of the rows the filter selects, in the sort's order (then by name, bytewise). */
    async function names(filter: Expr | undefined, sort: Sort = [], table = 'items', map = MAP): Promise<string[]> {
      const frag = toSql({ filter, sort }, map, [], 'name COLLATE "C" ASC');
      const where = frag.where.length > 0 ? `WHERE ${frag.where.join(' AND ')}` : '';
      const { rows } = await db.query<{ name: string }>(`SELECT name FROM ${table} ${where} ORDER BY ${frag.orderBy}`, frag.params).catch(throwSqlError);
      return rows.map((r) => r.name);
    }
    const eq = (path: string, value: Value): Expr => ({ op: 'cmp', field: field(...path.split('.')), cmp: 'eq', value });
    const cmp = (path: string, op: 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge', value: Value): Expr => ({ op: 'cmp', field: field(...path.split('.')), cmp: op, value });
    const match = (path: string, kind: 'regex' | 'startswith' | 'endswith' | 'contains', value: string, flags: '' | 'i' = ''): Expr =>
      ({ op: 'match', field: field(...path.split('.')), kind, value, flags });
    const num = (value: number): Value => ({ type: 'number', value });
    const date = (value: string): Value => ({ type: 'date', value });
    const bool = (value: boolean): Value => ({ type: 'boolean', value });
    const NULL: Value = { type: 'null', value: null };
    const code = async (p: Promise<unknown>) => p.then(() => 'no error', (e: unknown) => (e instanceof AppError ? `${e.status} ${e.code}` : String(e)));

    it('and, or, not', async () => {
      expect(await names({ op: 'and', args: [eq('metadata.tag', text('x')), eq('done', bool(false))] })).toEqual(C(['gamma']));
      expect(await names({ op: 'or', args: [eq('name', text('alpha')), eq('name', text('beta'))] })).toEqual(C(['alpha', 'beta']));
      // not: rows where the inner test is unknown (no metadata.ok) count as "not matched", so they are included
      expect(await names({ op: 'not', arg: eq('metadata.ok', bool(true)) })).toEqual(C(['100%_sure', 'back\\slash', 'beta', 'Delta', 'gamma']));
      expect(await names({ op: 'and', args: [] })).toHaveLength(ROWS.length);
      expect(await names({ op: 'or', args: [] })).toEqual(C([]));
    });

    it('typed column comparisons: numbers, dates, booleans, text; plain text values read as the column type', async () => {
      expect(await names(cmp('size', 'gt', num(10)))).toEqual(C(['beta', 'Delta']));
      expect(await names(cmp('size', 'le', num(10)))).toEqual(C(['100%_sure', 'alpha', 'back\\slash']));
      // numeric, not textual: '7' > '12' as text, 7 < 12 as numbers
      expect(await names(cmp('size', 'lt', text('12')))).toEqual(C(['100%_sure', 'alpha', 'back\\slash']));
      expect(await names(eq('size', text('10.0')))).toEqual(C(['alpha']));
      expect(await names(eq('size', text('abc')))).toEqual(C([])); // does not parse as a number: compares the text form
      expect(await names(cmp('created', 'ge', date('2024-04-01T00:00:00Z')))).toEqual(C(['100%_sure', 'back\\slash', 'Delta']));
      expect(await names(eq('created', text('2024-06-01T12:30:00+02:00')))).toEqual(C(['Delta']));
      expect(await names(eq('created', text('2024-02-30')))).toEqual(C([])); // not a calendar date: never reaches timestamptz
      expect(await names(eq('done', text('true')))).toEqual(C(['100%_sure', 'alpha', 'back\\slash']));
      expect(await names(cmp('name', 'gt', text('f')))).toEqual(C(['gamma']));
      expect(await names(cmp('name', 'ne', text('alpha')))).toHaveLength(ROWS.length - 1);
      expect(await names(eq('size', NULL))).toEqual(C(['gamma']));
      expect(await names(cmp('size', 'ne', NULL))).toHaveLength(ROWS.length - 1);
      // ne includes rows whose value is absent (NULL), as "not equal" reads
      expect(await names(cmp('size', 'ne', num(10)))).toContain('gamma');
      expect(await code(names(cmp('size', 'eq', date('2024-01-01'))))).toBe('400 INVALID_FILTER');
      expect(await code(names(cmp('size', 'lt', NULL)))).toBe('400 INVALID_FILTER');
      // typed values a parser hands over are checked before PostgreSQL sees them
      expect(await code(names(cmp('created', 'lt', date('2024-02-30'))))).toBe('400 INVALID_FILTER');
      expect(await code(names(cmp('metadata.when', 'lt', date('yesterday'))))).toBe('400 INVALID_FILTER');
      expect(await code(names(cmp('size', 'lt', num(Infinity))))).toBe('400 INVALID_FILTER');
    });

    it('metadata paths compare with jsonb typing: numbers as numbers, booleans as booleans, ISO strings as dates', async () => {
      // a number matches JSON numbers only (the string "5" of gamma does not)
      expect(await names(eq('metadata.n', num(5)))).toEqual(C(['alpha']));
      expect(await names(cmp('metadata.n', 'gt', num(11)))).toEqual(C(['100%_sure', 'beta', 'Delta']));
      // text compares with the JSON value's text form, as the workflow listings always did: both 5 and "5"
      expect(await names(eq('n', text('5')))).toEqual(C(['alpha', 'gamma']));
      expect(await names(eq('metadata.ok', bool(false)))).toEqual(C(['beta']));
      expect(await names(eq('ok', text('false')))).toEqual(C(['beta']));
      // 12:00Z and 14:00+02:00 are the same instant; "not a date", "2024-02-30" and the number 5 are no dates
      expect(await names(eq('metadata.when', date('2024-03-01T12:00:00.000Z')))).toEqual(C(['alpha', 'beta']));
      expect(await names(cmp('metadata.when', 'lt', date('2024-03-01T06:00:00Z')))).toEqual(C(['back\\slash']));
      expect(await names(cmp('metadata.when', 'ne', date('2024-03-01T12:00:00Z')))).toEqual(C(['100%_sure', 'back\\slash', 'Delta', 'gamma']));
      expect(await names(eq('metadata.deep.k', text('v2')))).toEqual(C(['beta']));
      // JSON null and an absent key are both null
      expect(await names(eq('metadata.note', NULL))).toEqual(C(['100%_sure', 'back\\slash', 'beta', 'Delta', 'gamma']));
      expect(await names(cmp('metadata.note', 'ne', NULL))).toEqual(C(['alpha']));
      expect(await names(eq('metadata.arr', text('[1, 2]')))).toEqual(C(['Delta']));
    });

    it('regular expressions (case-sensitive and not), startswith, endswith, contains', async () => {
      expect(await names(match('name', 'regex', '^[a-c]'))).toEqual(C(['alpha', 'back\\slash', 'beta']));
      expect(await names(match('name', 'regex', '^d', 'i'))).toEqual(C(['Delta']));
      expect(await names(match('metadata.tag', 'regex', '^x$'))).toEqual(C(['alpha', 'gamma']));
      expect(await names(match('name', 'startswith', 'al'))).toEqual(C(['alpha']));
      expect(await names(match('name', 'startswith', 'DEL', 'i'))).toEqual(C(['Delta']));
      expect(await names(match('name', 'endswith', 'ta'))).toEqual(C(['beta', 'Delta']));
      expect(await names(match('name', 'contains', 'mm'))).toEqual(C(['gamma']));
      expect(await names(match('metadata.pct', 'contains', '0%'))).toEqual(C(['100%_sure']));
      expect(await names(match('size', 'startswith', '1'))).toEqual(C(['alpha', 'Delta']));
    });

    it('LIKE wildcards and the escape character in values match literally', async () => {
      expect(await names(match('name', 'contains', '%'))).toEqual(C(['100%_sure']));
      expect(await names(match('name', 'contains', '_'))).toEqual(C(['100%_sure']));
      expect(await names(match('name', 'startswith', '100%_'))).toEqual(C(['100%_sure']));
      expect(await names(match('name', 'startswith', '1_0'))).toEqual(C([])); // "_" is not "any character"
      expect(await names(match('metadata.tag', 'contains', '_'))).toEqual(C(['back\\slash']));
      expect(await names(match('metadata.tag', 'contains', 'x%'))).toEqual(C(['Delta']));
      expect(await names(match('name', 'contains', '\\'))).toEqual(C(['back\\slash']));
      expect(await names(match('name', 'endswith', 'k\\slash'))).toEqual(C(['back\\slash']));
    });

    it('sorts columns by type and metadata as jsonb (numbers as numbers)', async () => {
      expect(await names(undefined, [{ field: field('size'), desc: true }])).toEqual(['beta', 'Delta', 'alpha', 'back\\slash', '100%_sure', 'gamma']);
      const byN = await names(match('metadata.n', 'regex', '.'), [{ field: field('metadata', 'n'), desc: false }]);
      // jsonb orders strings before numbers; numbers 5 < 12 < 40 < 100.5 (text order would put 100.5 first)
      expect(byN).toEqual(['gamma', 'alpha', 'Delta', 'beta', '100%_sure']);
      expect(await names(undefined, [{ field: field('created'), desc: true }])).toEqual(['Delta', 'back\\slash', '100%_sure', 'gamma', 'beta', 'alpha']);
    });

    it('values and paths are bound parameters: quotes and SQL in them are just text', async () => {
      expect(await names(eq('name', text("alpha' OR '1'='1")))).toEqual(C([]));
      expect(await names(eq("metadata.x'); DROP TABLE items; --", text('1')))).toEqual(C([]));
      expect(await names(undefined, [{ field: field("a'b"), desc: false }])).toHaveLength(ROWS.length);
    });

    it('prototype names are ordinary (unknown) fields, never Object.prototype members', async () => {
      for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf']) {
        expect(await names(eq(name, text('x')))).toEqual(C([]));
        expect(await names(undefined, [{ field: field(name), desc: true }])).toHaveLength(ROWS.length);
        expect(await code(names(eq(name, text('x')), [], 'items', STRICT))).toBe('400 INVALID_PROPERTY');
      }
    });

    it('without a rest field, unknown names are 400; json fields take sub-paths', async () => {
      expect(await names(eq('data.tag', text('y')), [], 'items', STRICT)).toEqual(C(['beta']));
      expect(await code(names(eq('size', text('1')), [], 'items', STRICT))).toBe('400 INVALID_PROPERTY');
    });

    it('NUL characters in values or names are 400 before any SQL', async () => {
      expect(await code(names(eq('name', text('a\u0000b'))))).toBe('400 INVALID_CHARACTER');
      expect(await code(names(eq('metadata.a\u0000', text('x'))))).toBe('400 INVALID_CHARACTER');
      expect(await code(names(match('name', 'contains', '\u0000')))).toBe('400 INVALID_CHARACTER');
    });

    it('regular expressions PostgreSQL refuses are 400 INVALID_FILTER, also when no row is read', async () => {
      for (const pattern of ['a{99999}', '\\1', '(?<n>a)\\k<n>', '\\p{L}', '[[:foo:]]', 'x{1000}']) {
        expect(new RegExp(pattern) instanceof RegExp).toBe(true); // valid in JavaScript
        expect(await code(names(match('name', 'regex', pattern))), pattern).toBe('400 INVALID_FILTER');
        expect(await code(names(match('name', 'regex', pattern), [], 'empty_items')), `${pattern} on no rows`).toBe('400 INVALID_FILTER');
        // inside not/or, the pattern is still judged once per statement
        expect(await code(names({ op: 'or', args: [eq('name', text('alpha')), { op: 'not', arg: match('metadata.tag', 'regex', pattern, 'i') }] }, [], 'empty_items'))).toBe('400 INVALID_FILTER');
      }
      // lookbehind is fine in PostgreSQL too
      expect(await names(match('name', 'regex', '(?<=al)pha'))).toEqual(C(['alpha']));
    });

    it('the workflow query string builds the tree: exact values and regexes, ANDed', async () => {
      const q = parseListQuery({ tag: 'x', name: '/^G/i', sort: '-name', limit: '5' }, []);
      expect(q.filter).toEqual({
        op: 'and', args: [
          { op: 'cmp', field: { path: ['tag'] }, cmp: 'eq', value: { type: 'text', value: 'x' } },
          { op: 'match', field: { path: ['name'] }, kind: 'regex', value: '^G', flags: 'i' },
        ],
      });
      expect(q.sort).toEqual([{ field: { path: ['name'] }, desc: true }]);
      expect(await names(q.filter, q.sort)).toEqual(C(['gamma']));
      expect(await names(parseListQuery({ 'metadata.deep.k': 'v1' }, []).filter)).toEqual(C(['alpha']));
      expect(await names(parseListQuery({ size: '200' }, []).filter)).toEqual(C(['beta']));
      expect(parseListQuery({ offset: '2' }, []).filter).toBeUndefined();
    });
  });
}
