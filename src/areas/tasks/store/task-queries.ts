import type { Sql } from '../../../storage/driver/database.js';
import { throwSqlError } from '../../../errors/sql-errors.js';
import { fieldMap } from '../../../query/fields.js';
import type { ListQuery } from '../../../query/tree.js';
import { toSql } from '../../../query/to-sql.js';
import { TASK_COLS, TASK_COLS_NO_CSTATS, type TaskRow } from './task-store.js';
import type { StoredPrincipal } from '../task-principal.js';

/** Task searches: pages and counts of `tasks` by scope, filter and sort (the rows are written by `task-store.ts`). */

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

/**
 * The tids of a page of tasks matching the scope and the query, in the
 * query's order (default: oldest first): a search's first statement. The
 * rows follow in small groups (`tasksByIds`), so a page of large tasks is
 * never read, nor held, at once.
 */
export async function pageTaskIds(sql: Sql, scope: TaskScope, q: ListQuery): Promise<string[]> {
  const params: unknown[] = [];
  const where = whereOf(scope, params);
  const frag = toSql(q, TASK_FIELDS, params, 'created ASC, tid ASC');
  params.push(q.limit, q.offset);
  const all = [...where, ...frag.where];
  const { rows } = await sql.query<{ tid: string }>(
    `SELECT tid FROM tasks ${all.length > 0 ? `WHERE ${all.join(' AND ')}` : ''}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows.map((r) => r.tid);
}

/** The tasks of `tids` in that order; a tid whose task is gone (deleted since) is left out. */
export async function tasksByIds(sql: Sql, tids: readonly string[], opts = { cstats: true }): Promise<TaskRow[]> {
  if (tids.length === 0) return [];
  const { rows } = await sql.query<TaskRow>(
    `SELECT ${opts.cstats ? TASK_COLS : TASK_COLS_NO_CSTATS} FROM tasks WHERE tid = ANY($1::uuid[])`, [tids]);
  const byId = new Map(rows.map((r) => [r.tid, r]));
  return tids.flatMap((tid) => byId.get(tid) ?? []);
}

/**
 * How many tasks `identities` have as creator or owner, counted up to
 * `upTo` (the limit's check needs no more): `tasks.maxPerUser`. Through the
 * `tasks_creator` and `tasks_owner` indexes.
 */
export async function countTasksOf(sql: Sql, identities: readonly string[], upTo: number): Promise<number> {
  const { rows } = await sql.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (SELECT 1 FROM tasks WHERE creator = ANY($1::text[]) OR owner = ANY($1::text[]) LIMIT $2) t`,
    [identities, upTo]);
  return rows[0]?.n ?? 0;
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

/** What a connector's work for a task needs of it: its service, status, run and whom it acts for (`runAs`). */
export interface TaskRunner {
  tid: string;
  sid: string;
  status: string;
  run: number;
  creator: string | null;
  owner: string | null;
  principal: StoredPrincipal | null;
}

export async function taskRunner(sql: Sql, tid: string): Promise<TaskRunner | undefined> {
  const { rows } = await sql.query<TaskRunner>('SELECT tid, sid, status, run, creator, owner, principal FROM tasks WHERE tid = $1', [tid]);
  return rows[0];
}
