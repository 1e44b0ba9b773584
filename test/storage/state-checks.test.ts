import type { IntakeClaim } from '../../src/connectors/ports.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/storage/driver/database.js';
import { ITEM_OUTCOMES, TASK_STATUSES } from '../../src/areas/tasks/actions/task-states.js';
import { JOB_STATES } from '../../src/areas/print/jobs/job-states.js';
import { COMMAND_STATES } from '../../src/areas/commands/command-states.js';
import { PRINTER_STATES, printerState } from '../../src/areas/print/printers/printer-states.js';
import type { PrintLogLevel } from '../../src/areas/print/jobs/store/job-reads.js';
import type { EntryRow } from '../../src/areas/repository/entry.js';
import type { FlowRow } from '../../src/areas/print/flows/flow-store.js';
import type { ListKind } from '../../src/areas/lists/store/list-store.js';
import { MESSAGE_TYPES } from '../../src/areas/messages/store/message-store.js';
import { bothDrivers } from '../helpers/databases.js';

/**
 * The live state tables held to the CHECK constraints a migrated schema has.
 * Migrations are frozen text (their lists are copies), so a value added to a
 * state table in code needs a new migration replacing the CHECK; this test is
 * what notices one that is missing (or a CHECK changed without the code).
 */

/**
 * Every value of a string union, each once: a list missing a member does not
 * compile (`allOf<T>()([...])`), nor does one with a value outside it. For
 * CHECK lists whose live counterpart is a type, not a runtime table.
 */
const allOf = <T extends string>() =>
  <const V extends readonly T[]>(values: V & ([T] extends [V[number]] ? unknown : never)): readonly string[] => values;

/** table.column -> the values the live code allows there. */
const LIVE: Record<string, readonly string[]> = {
  'tasks.status': TASK_STATUSES,
  'task_items.outcome': ITEM_OUTCOMES,
  'print_jobs.status': JOB_STATES,
  'commands.state': COMMAND_STATES,
  // no runtime table of these; the row types are the live definition
  'entries.type': allOf<EntryRow['type']>()(['document', 'collection']),
  'lists.kind': allOf<ListKind>()(['user', 'input', 'output']),
  'print_flows.type': allOf<FlowRow['type']>()(['standard', 'custom']),
  'print_logs.level': allOf<PrintLogLevel>()(['debug', 'info', 'warning', 'error']),
  'messages.type': MESSAGE_TYPES,
  'intake_files.state': allOf<IntakeClaim['state']>()(['claimed', 'stored', 'done', 'failed']),
};

interface Check { table: string; column: string; def: string }

/** The single-column CHECK constraints of the schema, by pg_get_constraintdef. */
async function checks(db: Database): Promise<Check[]> {
  const { rows } = await db.query<Check>(
    `SELECT c.relname AS table, a.attname AS column, pg_get_constraintdef(k.oid) AS def
       FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid
       JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = k.conkey[1]
      WHERE k.contype = 'c' AND cardinality(k.conkey) = 1
        AND c.relnamespace = current_schema()::regnamespace
      ORDER BY 1, 2, 3`);
  return rows;
}

/**
 * The allowed values of a CHECK of the form `col IN ('a', 'b')`, which
 * PostgreSQL keeps as `CHECK ((col = ANY (ARRAY['a'::text, 'b'::text])))`;
 * undefined for any other shape (a range, a comparison).
 */
function inList(c: Check): string[] | undefined {
  const m = /^CHECK \(\((\w+) = ANY \(ARRAY\[(.*)\]\)\)\)$/.exec(c.def);
  if (!m || m[1] !== c.column) return undefined;
  const values = [...m[2]!.matchAll(/'((?:[^']|'')*)'::text(?:, |$)/g)].map((v) => v[1]!.replaceAll("''", "'"));
  // every element parsed: nothing in the array but text literals
  expect(values.map((v) => `'${v.replaceAll("'", "''")}'::text`).join(', ')).toBe(m[2]);
  return values;
}

for (const [name, open] of bothDrivers({ migrate: true, poolSize: 2 })) {
  describe(`state tables and CHECK constraints on ${name}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    let lists: Map<string, string[]>;
    beforeAll(async () => {
      ({ db, drop } = await open());
      lists = new Map();
      for (const c of await checks(db)) {
        const values = inList(c);
        if (values) lists.set(`${c.table}.${c.column}`, values);
      }
    }, 120_000); // a full migration in the WASM engine is slow on a loaded machine
    afterAll(() => drop());

    it('every value list CHECK of the schema has its live table here (a new one is noticed)', () => {
      expect([...lists.keys()].sort()).toEqual(Object.keys(LIVE).sort());
    });

    for (const [column, live] of Object.entries(LIVE)) {
      it(`${column}: the CHECK allows exactly the live values`, () => {
        // as sets: the order of either list means nothing
        expect([...(lists.get(column) ?? [])].sort()).toEqual([...live].sort());
      });
    }

    it('printers: the two printer states are the boolean `paused` column, no CHECK list', async () => {
      expect([printerState({ paused: false }), printerState({ paused: true })]).toEqual([...PRINTER_STATES]);
      const { rows } = await db.query<{ type: string; notnull: boolean }>(
        `SELECT format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS notnull
           FROM pg_attribute a WHERE a.attrelid = 'printers'::regclass AND a.attname = 'paused'`);
      expect(rows).toEqual([{ type: 'boolean', notnull: true }]);
    });
  });
}
