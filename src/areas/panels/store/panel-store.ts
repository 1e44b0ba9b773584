import { throwSqlError } from '../../../errors/sql-errors.js';
import { fieldMap } from '../../../query/fields.js';
import type { ListQuery } from '../../../query/tree.js';
import { toSql } from '../../../query/to-sql.js';
import type { Sql, Tx } from '../../../storage/driver/database.js';

/**
 * The one store of the `panels` table (migration 022): user-defined UI
 * panels. A panel's holder is its owner, else its creator; names are unique
 * per holder (`panels_holder_name`, a unique violation is 409 `NAME_EXISTS`:
 * sql-errors.ts). Every statement is parameterized; filter paths reach SQL
 * only through `PANEL_FIELDS`.
 */

export interface PanelRow {
  pid: string;
  name: string;
  /** The ConfigItem as sent, less the fields the server keeps itself (`pid`, `name`, `creator`, ...). */
  config: Record<string, unknown>;
  task_id: string | null;
  creator: string;
  owner: string | null;
  created: Date;
  modified: Date;
}

export interface NewPanel {
  pid: string;
  /** Undefined: the first free "Panel <n>" of the holder. */
  name: string | undefined;
  config: Record<string, unknown>;
  taskId: string | null;
  creator: string;
  owner: string | null;
}

/** API fields of the panel listing; any other name is a key (or dotted path) of the panel's configuration. */
export const PANEL_FIELDS = fieldMap({
  pid: { sql: 'pid::text', type: 'text' },
  name: { sql: 'name', type: 'text', notNull: true },
  taskId: { sql: 'task_id::text', type: 'text' },
  creator: { sql: 'creator', type: 'text', notNull: true },
  owner: { sql: 'owner', type: 'text' },
  created: { sql: 'created', type: 'date', notNull: true },
  modified: { sql: 'modified', type: 'date', notNull: true },
  config: { sql: 'config', type: 'json' },
}, 'config');

const COLS = 'pid, name, config, task_id, creator, owner, created, modified';

/**
 * Serializes the panel writes of one holder for the rest of the
 * transaction (a transaction-level advisory lock on the holder's name), so
 * the free generated name one create picks is still free when it inserts.
 */
export async function lockHolder(tx: Tx, holder: string): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('panels'), hashtext($1))`, [holder]);
}

/** Inserts a panel; a name the holder uses already is 409 `NAME_EXISTS`. */
export async function insertPanel(sql: Sql, p: NewPanel): Promise<PanelRow> {
  const holder = p.owner ?? p.creator;
  // a generated name: the smallest n whose "Panel n" the holder does not use (one of 1..count+1 is free)
  const { rows } = await sql.query<PanelRow>(
    `INSERT INTO panels (pid, name, config, task_id, creator, owner)
     SELECT $1, coalesce($2::text, (
       SELECT 'Panel ' || n FROM generate_series(1, (SELECT count(*) + 1 FROM panels WHERE coalesce(owner, creator) = $7)) AS n
       WHERE NOT EXISTS (SELECT 1 FROM panels WHERE coalesce(owner, creator) = $7 AND name = 'Panel ' || n)
       ORDER BY n LIMIT 1)), $3, $4, $5, $6
     RETURNING ${COLS}`,
    [p.pid, p.name ?? null, JSON.stringify(p.config), p.taskId, p.creator, p.owner, holder],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** A panel by id; `lock` takes its row lock for the rest of the transaction. */
export async function getPanel(sql: Sql, pid: string, opts: { lock?: boolean } = {}): Promise<PanelRow | undefined> {
  const { rows } = await sql.query<PanelRow>(`SELECT ${COLS} FROM panels WHERE pid = $1${opts.lock ? ' FOR UPDATE' : ''}`, [pid]);
  return rows[0];
}

/** The panels whose creator or owner is one of `identities`, filtered, sorted and paged. */
export async function listPanels(sql: Sql, identities: readonly string[], q: ListQuery): Promise<PanelRow[]> {
  const params: unknown[] = [identities];
  const frag = toSql(q, PANEL_FIELDS, params, 'created ASC, pid ASC');
  params.push(q.limit, q.offset);
  const { rows } = await sql.query<PanelRow>(
    `SELECT ${COLS} FROM panels WHERE ${['(creator = ANY($1::text[]) OR owner = ANY($1::text[]))', ...frag.where].join(' AND ')}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

/** Replaces a panel's configuration, name and task; undefined when it is gone. */
export async function replacePanel(sql: Sql, pid: string, change: { name: string; config: Record<string, unknown>; taskId: string | null }): Promise<PanelRow | undefined> {
  const { rows } = await sql.query<PanelRow>(
    `UPDATE panels SET name = $2, config = $3, task_id = $4, modified = now() WHERE pid = $1 RETURNING ${COLS}`,
    [pid, change.name, JSON.stringify(change.config), change.taskId],
  ).catch(throwSqlError);
  return rows[0];
}

/** Deletes a panel; the deleted row, or undefined when there was none. */
export async function deletePanel(sql: Sql, pid: string): Promise<PanelRow | undefined> {
  const { rows } = await sql.query<PanelRow>(`DELETE FROM panels WHERE pid = $1 RETURNING ${COLS}`, [pid]);
  return rows[0];
}
