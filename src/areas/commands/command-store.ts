import type { Sql } from '../../storage/driver/database.js';
import { statesMovingTo, type CommandState } from './command-states.js';

export interface CommandRow {
  cid: string;
  sid: string;
  command: string;
  parameters: Record<string, unknown>;
  state: CommandState;
  progress_done: number;
  progress_total: number | null;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  creator: string | null;
  created: Date;
  updated: Date;
  expires: Date;
  attempts: number;
}

const COLS = 'cid, sid, command, parameters, state, progress_done, progress_total, result, error, creator, created, updated, expires, attempts';

/**
 * The INSERT of a new command (queued), as a statement the caller runs: alone
 * or fused with its job (`Outbox.addWith`). Returns only the id: the launch
 * answers with nothing else, and every column read back costs parsing on
 * both sides.
 */
export function insertCommandStatement(c: Pick<CommandRow, 'cid' | 'sid' | 'command' | 'parameters' | 'creator'>, expirySec: number): { text: string; params: unknown[] } {
  return {
    text: `INSERT INTO commands (cid, sid, command, parameters, state, creator, expires)
     VALUES ($1, $2, $3, $4, 'queued', $5, now() + make_interval(secs => $6)) RETURNING cid`,
    params: [c.cid, c.sid, c.command, JSON.stringify(c.parameters), c.creator, expirySec],
  };
}

export async function getCommand(sql: Sql, cid: string, lock = false): Promise<CommandRow | undefined> {
  const { rows } = await sql.query<CommandRow>(`SELECT ${COLS} FROM commands WHERE cid = $1${lock ? ' FOR UPDATE' : ''}`, [cid]);
  return rows[0];
}

/** The commands of `cids` (each once), in no order; absent ones are left out. */
export async function getCommands(sql: Sql, cids: readonly string[]): Promise<CommandRow[]> {
  const { rows } = await sql.query<CommandRow>(`SELECT ${COLS} FROM commands WHERE cid = ANY($1::uuid[])`, [cids]);
  return rows;
}

/**
 * Moves a command to `to` when the state table allows it, in one statement:
 * the WHERE clause admits exactly the states the table lets move to `to`, and
 * PostgreSQL re-checks it on the locked row, so two workers racing for the
 * same command cannot both move it. Returns the updated row (to `running`,
 * which the runner works from) or `{ cid }` (any other state: only whether it
 * happened matters, and every column read back costs parsing), or undefined
 * when the move is not allowed (gone, or final already: a duplicate job must
 * not redo it).
 */
export async function transition(sql: Sql, cid: string, to: 'running', fields?: TransitionFields): Promise<CommandRow | undefined>;
export async function transition(sql: Sql, cid: string, to: CommandState, fields?: TransitionFields): Promise<{ cid: string } | undefined>;
export async function transition(sql: Sql, cid: string, to: CommandState, fields: TransitionFields = {}): Promise<{ cid: string } | undefined> {
  const { rows } = await sql.query<{ cid: string }>(
    `UPDATE commands SET state = $2, updated = now(),
       attempts = attempts + CASE WHEN $2 = 'running' THEN 1 ELSE 0 END,
       result = COALESCE($3, result), error = COALESCE($4, error),
       expires = CASE WHEN $5::int IS NULL THEN expires ELSE now() + make_interval(secs => $5::int) END,
       progress_done = CASE WHEN $7::boolean THEN $8 ELSE progress_done END,
       progress_total = CASE WHEN $7::boolean THEN $9 ELSE progress_total END
     WHERE cid = $1 AND state = ANY($6::text[])
     RETURNING ${to === 'running' ? COLS : 'cid'}`,
    [cid, to, fields.result === undefined ? null : JSON.stringify(fields.result),
      fields.error === undefined ? null : JSON.stringify(fields.error), fields.expirySec ?? null, statesMovingTo(to),
      fields.progress !== undefined, fields.progress?.done ?? null, fields.progress?.total ?? null],
  );
  return rows[0];
}

/** What a transition writes besides the state. */
export interface TransitionFields {
  result?: unknown;
  error?: unknown;
  expirySec?: number;
  progress?: { done: number; total: number | null };
}

export async function setProgress(sql: Sql, cid: string, done: number, total: number | null): Promise<void> {
  await sql.query(`UPDATE commands SET progress_done = $2, progress_total = $3, updated = now() WHERE cid = $1 AND state = 'running'`, [cid, done, total]);
}

/** Commands the database says still have to run (the reconciler re-enqueues them). */
export async function pendingCommands(sql: Sql, limit: number): Promise<{ cid: string; sid: string }[]> {
  const { rows } = await sql.query<{ cid: string; sid: string }>(
    `SELECT cid, sid FROM commands WHERE state IN ('queued', 'running') ORDER BY created LIMIT $1`, [limit]);
  return rows;
}

export async function deleteCommand(sql: Sql, cid: string): Promise<void> {
  await sql.query('DELETE FROM commands WHERE cid = $1', [cid]);
}

/** Drops final commands nobody read in time. Pending ones never expire: they still have work to do. */
export async function deleteExpired(sql: Sql): Promise<number> {
  const { rowCount } = await sql.query(`DELETE FROM commands WHERE expires < now() AND state IN ('success', 'failure')`);
  return rowCount;
}
