import type { StateEffect } from '../facets/tasks.js';
import type { Sql } from '../../storage/driver/database.js';
import type { ConnectorStateStore, StateEntry } from '../ports.js';

interface Row {
  key: string;
  value: unknown;
  updated: Date;
}

/** Escapes LIKE wildcards so a prefix is matched literally. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** `put`'s conflict clause: the new value replaces the old. */
const PUT_CONFLICT = 'ON CONFLICT (sid, key) DO UPDATE SET value = EXCLUDED.value, updated = now()';

/**
 * `increment`'s conflict clause (the row aliased `s`), adding the parameter
 * `by`: a value that is not a number counts as 0 (jsonb_typeof), so a counter
 * never fails on old data.
 */
const incrementConflict = (by: string) => `ON CONFLICT (sid, key) DO UPDATE SET updated = now(), value = to_jsonb(
      CASE WHEN jsonb_typeof(s.value) = 'number' THEN (s.value #>> '{}')::numeric ELSE 0 END + ${by}::bigint)`;

/**
 * A `StateEffect` as the body of a data-modifying CTE, applied once when the
 * CTE `gate` of the same statement has a row (so only when the statement's
 * own change happened), with the same meaning as the store's `increment` and
 * `put`. Its parameters are `effectParams(...)`, numbered from `$first`; the
 * text depends only on the kind of effect, so callers can keep it.
 */
export function effectSql(op: StateEffect['op'], gate: string, first: number): string {
  const [sid, key, value] = [first, first + 1, first + 2].map((i) => `$${i}`);
  const when = `WHERE EXISTS (SELECT 1 FROM ${gate})`;
  if (op === 'put') {
    return `INSERT INTO connector_state (sid, key, value) SELECT ${sid}, ${key}, ${value}::jsonb ${when} ${PUT_CONFLICT}`;
  }
  return `INSERT INTO connector_state AS s (sid, key, value) SELECT ${sid}, ${key}, to_jsonb(${value}::bigint) ${when} ${incrementConflict(value!)}`;
}

/** The parameters of `effectSql(effect.op, …)`, in order. */
export function effectParams(effect: StateEffect, sid: string): unknown[] {
  return [sid, effect.key, effect.op === 'put' ? JSON.stringify(effect.value) : (effect.by ?? 1)];
}

/** The SQL of `connector_state`, scoped to one service. */
export function stateStore(db: Sql, sid: string): ConnectorStateStore {
  return {
    async get(key) {
      const { rows } = await db.query<Row>('SELECT key, value, updated FROM connector_state WHERE sid = $1 AND key = $2', [sid, key]);
      return rows[0];
    },
    async put(key, value) {
      await db.query(
        `INSERT INTO connector_state (sid, key, value) VALUES ($1, $2, $3::jsonb) ${PUT_CONFLICT}`,
        [sid, key, JSON.stringify(value)],
      );
    },
    async putIfAbsent(key, value) {
      const { rowCount } = await db.query(
        'INSERT INTO connector_state (sid, key, value) VALUES ($1, $2, $3::jsonb) ON CONFLICT (sid, key) DO NOTHING',
        [sid, key, JSON.stringify(value)],
      );
      return rowCount > 0;
    },
    async increment(key, by = 1) {
      const { rows } = await db.query<{ value: number }>(
        `INSERT INTO connector_state AS s (sid, key, value) VALUES ($1, $2, to_jsonb($3::bigint)) ${incrementConflict('$3')} RETURNING value`,
        [sid, key, by],
      );
      return Number(rows[0]!.value);
    },
    async delete(key) {
      const { rowCount } = await db.query('DELETE FROM connector_state WHERE sid = $1 AND key = $2', [sid, key]);
      return rowCount > 0;
    },
    async list(prefix, limit = 1000): Promise<StateEntry[]> {
      const { rows } = await db.query<Row>(
        `SELECT key, value, updated FROM connector_state WHERE sid = $1 AND key LIKE $2 ESCAPE '\\' ORDER BY key LIMIT $3`,
        [sid, likePrefix(prefix), Math.max(1, Math.min(limit, 10_000))],
      );
      return rows;
    },
  };
}
