import type { Sql } from '../../storage/driver/database.js';
import { throwSqlError } from '../../errors/sql-errors.js';
import { fieldMap } from '../../query/fields.js';
import type { ListQuery } from '../../query/tree.js';
import { toSql } from '../../query/to-sql.js';
import { CSTATS_COLUMN } from './actions/item-state-store.js';

/** SQL of the `tasks` table; every statement is parameterized. Lists and items live in the list store. */

export interface TaskRow {
  tid: string;
  sid: string;
  name: string;
  type: string | null;
  status: string;
  metadata: Record<string, unknown>;
  cstats: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
  created: Date;
  modified: Date;
}

/** API fields of a task; any other filter or sort name is a path into metadata. */
export const TASK_FIELDS = fieldMap({
  tid: { sql: 'tid', type: 'text' },
  sid: { sql: 'sid', type: 'text' },
  name: { sql: 'name', type: 'text' },
  type: { sql: 'type', type: 'text' },
  status: { sql: 'status', type: 'text' },
  creator: { sql: 'creator', type: 'text' },
  owner: { sql: 'owner', type: 'text' },
  created: { sql: 'created', type: 'date' },
  modified: { sql: 'modified', type: 'date' },
  metadata: { sql: 'metadata', type: 'json' },
}, 'metadata');

// cstats comes from the per-item state rows (actions/item-state-store.ts), never the old column
const COLS = `tid, sid, name, type, status, metadata, ${CSTATS_COLUMN}, creator, owner, created, modified`;
// searches aggregate the item rows only when `cstats` is embedded (a large task's are many)
const COLS_NO_CSTATS = `tid, sid, name, type, status, metadata, '{}'::jsonb AS cstats, creator, owner, created, modified`;

export interface NewTask {
  tid: string;
  sid: string;
  name: string;
  type: string | null;
  metadata: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
}

export async function insertTask(sql: Sql, t: NewTask): Promise<TaskRow> {
  const { rows } = await sql.query<TaskRow>(
    `INSERT INTO tasks (tid, sid, name, type, metadata, creator, owner) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)
     RETURNING ${COLS}`,
    [t.tid, t.sid, t.name, t.type, JSON.stringify(t.metadata), t.creator, t.owner],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** The task, optionally locked for the rest of the transaction (`FOR UPDATE`). */
export async function getTask(sql: Sql, tid: string, lock = false): Promise<TaskRow | undefined> {
  const { rows } = await sql.query<TaskRow>(`SELECT ${COLS} FROM tasks WHERE tid = $1${lock ? ' FOR UPDATE' : ''}`, [tid]);
  return rows[0];
}

export async function updateTask(sql: Sql, tid: string, change: { name: string; type: string | null; metadata: Record<string, unknown> }): Promise<TaskRow> {
  const { rows } = await sql.query<TaskRow>(
    `UPDATE tasks SET name = $2, type = $3, metadata = $4::jsonb, modified = now() WHERE tid = $1 RETURNING ${COLS}`,
    [tid, change.name, change.type, JSON.stringify(change.metadata)],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** Marks the task changed (its input list changed). */
export async function touchTask(sql: Sql, tid: string): Promise<void> {
  await sql.query('UPDATE tasks SET modified = now() WHERE tid = $1', [tid]);
}

/** Deletes the task; its lists and their items go with it (foreign keys cascade). */
export async function deleteTask(sql: Sql, tid: string): Promise<void> {
  await sql.query('DELETE FROM tasks WHERE tid = $1', [tid]);
}

export interface TaskScope {
  /** One service, or every service when undefined. */
  sid?: string;
  /** Only tasks created or owned by one of these identities. */
  ownedBy?: string[];
  /** Only tasks whose input list names this repository document. */
  inputDocument?: string;
}

function whereOf(scope: TaskScope, params: unknown[]): string[] {
  const where: string[] = [];
  if (scope.sid !== undefined) {
    params.push(scope.sid);
    where.push(`sid = $${params.length}`);
  }
  if (scope.ownedBy) {
    params.push(scope.ownedBy);
    where.push(`(creator = ANY($${params.length}::text[]) OR owner = ANY($${params.length}::text[]))`);
  }
  if (scope.inputDocument !== undefined) {
    // list_items_doc finds the items, the lists' primary key their task: indexed both ways
    params.push(scope.inputDocument);
    where.push(`tid IN (SELECT l.tid FROM list_items i JOIN lists l ON l.lid = i.lid AND l.kind = 'input'
                        WHERE i.doc_uuid = $${params.length}::uuid)`);
  }
  return where;
}

/** A page of tasks matching the scope and the query; default order: oldest first. `cstats` is read only when asked for. */
export async function listTasks(sql: Sql, scope: TaskScope, q: ListQuery, opts = { cstats: true }): Promise<TaskRow[]> {
  const params: unknown[] = [];
  const where = whereOf(scope, params);
  const frag = toSql(q, TASK_FIELDS, params, 'created ASC, tid ASC');
  params.push(q.limit, q.offset);
  const all = [...where, ...frag.where];
  const { rows } = await sql.query<TaskRow>(
    `SELECT ${opts.cstats ? COLS : COLS_NO_CSTATS} FROM tasks ${all.length > 0 ? `WHERE ${all.join(' AND ')}` : ''}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

/** How many tasks match the scope and the query's filter (paging ignored): `inlineCount`. */
export async function countTasks(sql: Sql, scope: TaskScope, q: ListQuery): Promise<number> {
  const params: unknown[] = [];
  const where = whereOf(scope, params);
  const frag = toSql({ filter: q.filter, sort: [] }, TASK_FIELDS, params, 'tid');
  const all = [...where, ...frag.where];
  const { rows } = await sql.query<{ n: string }>(
    `SELECT count(*) AS n FROM tasks ${all.length > 0 ? `WHERE ${all.join(' AND ')}` : ''}`,
    params,
  ).catch(throwSqlError);
  return Number(rows[0]?.n ?? 0);
}
