import type { StateEffect } from '../facets/tasks.js';
import type { Sql } from '../../storage/driver/database.js';
import type { ConnectorStateStore, StateEntry } from '../ports.js';
import { fencedOut, fenceHolds, fenceParams, type Fence } from './fence.js';

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
 * `StateEffect`s as data-modifying CTEs of one statement: `rows` is a SELECT
 * of the effects to apply (`n` their order, `sid`, `op`, `key`, `value` as
 * text: the JSON of a put, the amount of an increment), typically gated on
 * the statement's own change, so an effect happens only when that change
 * does. Same meaning as the store's `increment` and `put`: increments of one
 * key add up, of several puts of one key the last (by `n`) wins. A key must
 * not be both put and incremented in one statement (`effectColumns` refuses
 * it). Keys are written in their order, so two such statements never wait
 * for each other in a cycle. Yields the CTEs `eff`, `eff_inc` and `eff_put`.
 */
export function effectsSql(rows: string): string {
  return `eff AS (${rows}),
     eff_inc AS (INSERT INTO connector_state AS s (sid, key, value)
       SELECT sid, key, to_jsonb(sum(value::bigint)::bigint) FROM eff WHERE op = 'increment' GROUP BY sid, key ORDER BY sid, key
       ${incrementConflict(`(EXCLUDED.value #>> '{}')`)}),
     eff_put AS (INSERT INTO connector_state (sid, key, value)
       SELECT DISTINCT ON (sid, key) sid, key, value::jsonb FROM eff WHERE op = 'put' ORDER BY sid, key, n DESC
       ${PUT_CONFLICT})`;
}

/** The parameters of `effectsSql`'s effects, one per entry (undefined: no effect), as four arrays: sid, op, key, value. */
export function effectColumns(effects: readonly ({ sid: string; effect: StateEffect } | undefined)[]): [(string | null)[], (string | null)[], (string | null)[], (string | null)[]] {
  const ops = new Map<string, StateEffect['op']>();
  for (const e of effects) {
    if (!e) continue;
    const id = JSON.stringify([e.sid, e.effect.key]);
    if ((ops.get(id) ?? e.effect.op) !== e.effect.op) throw new Error('effectColumns: one key both put and incremented');
    ops.set(id, e.effect.op);
  }
  return [
    effects.map((e) => e?.sid ?? null),
    effects.map((e) => e?.effect.op ?? null),
    effects.map((e) => e?.effect.key ?? null),
    effects.map((e) => (e ? (e.effect.op === 'put' ? JSON.stringify(e.effect.value) : String(e.effect.by ?? 1)) : null)),
  ];
}

/**
 * The SQL of `connector_state`, scoped to one service. With a `fence` (a
 * single-instance service on PostgreSQL), every write checks in its own
 * statement that this process still holds the service's lease, and throws
 * `LeaseLostError` when it does not: a holder paused past its lease writes
 * nothing after another process took over.
 */
export function stateStore(db: Sql, sid: string, fence?: Fence): ConnectorStateStore {
  const [lease, holder] = fenceParams(fence);
  // $1 and $2 of every write are the fence; the statement reports whether it held
  const write = async (cte: string, params: unknown[]): Promise<{ held: boolean; n: number; value?: unknown }> => {
    const { rows } = await db.query<{ held: boolean; n: number; value: unknown }>(
      `WITH f AS (SELECT ${fenceHolds('$1', '$2')} AS held), w AS (${cte})
       SELECT (SELECT held FROM f) AS held, (SELECT count(*)::int FROM w) AS n, (SELECT value FROM w LIMIT 1) AS value`,
      [lease, holder, ...params],
    );
    const r = rows[0]!;
    if (!r.held) throw fencedOut(fence);
    return r;
  };
  return {
    async get(key) {
      const { rows } = await db.query<Row>('SELECT key, value, updated FROM connector_state WHERE sid = $1 AND key = $2', [sid, key]);
      return rows[0];
    },
    async put(key, value) {
      await write(
        `INSERT INTO connector_state (sid, key, value) SELECT $3, $4, $5::jsonb FROM f WHERE f.held ${PUT_CONFLICT} RETURNING value`,
        [sid, key, JSON.stringify(value)],
      );
    },
    async putIfAbsent(key, value) {
      const { n } = await write(
        'INSERT INTO connector_state (sid, key, value) SELECT $3, $4, $5::jsonb FROM f WHERE f.held ON CONFLICT (sid, key) DO NOTHING RETURNING value',
        [sid, key, JSON.stringify(value)],
      );
      return n > 0;
    },
    async increment(key, by = 1) {
      const { value } = await write(
        `INSERT INTO connector_state AS s (sid, key, value) SELECT $3, $4, to_jsonb($5::bigint) FROM f WHERE f.held ${incrementConflict('$5')} RETURNING value`,
        [sid, key, by],
      );
      return Number(value);
    },
    async delete(key) {
      const { n } = await write('DELETE FROM connector_state WHERE sid = $3 AND key = $4 AND (SELECT held FROM f) RETURNING value', [sid, key]);
      return n > 0;
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
