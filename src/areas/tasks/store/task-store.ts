import type { ItemReport, StateEffect } from '../../../connectors/facets/tasks.js';
import { effectColumns, effectsSql } from '../../../connectors/lifecycle/state-store.js';
import { throwSqlError } from '../../../errors/sql-errors.js';
import type { FusedStatement } from '../../../outbox/outbox.js';
import type { JobData } from '../../../queue/jobs.js';
import type { Sql } from '../../../storage/driver/database.js';
import { sqlFile } from '../../../storage/sql-file.js';
import type { StoredPrincipal } from '../task-principal.js';
import { FINAL_OUTCOMES, OPEN_OUTCOMES, derivedStatus, sqlList, type TaskStatus } from '../actions/task-states.js';
import { CSTATS_COLUMN } from './cstats-column.js';

/**
 * The one writer of a task's rows: `tasks` and its per-item states
 * `task_items` (migration 007). The two change together (a start queues the
 * items under a new run, a final report may settle the task), so one module
 * holds every statement that inserts, updates or deletes either; the long
 * combined ones are statement files in `statements/`, each opening with its
 * parameters, locks and guarantees. Reads: `task-queries.ts` (searches),
 * `item-queries.ts` (item rows). Lists and their items live in the list store.
 */

export interface TaskRow {
  tid: string;
  sid: string;
  name: string;
  type: string | null;
  status: string;
  metadata: Record<string, unknown>;
  /** From the item rows (`CSTATS_COLUMN`); `{}` when read without. */
  cstats: Record<string, unknown>;
  /** Kept with the task (migration 026): input items, and of those done and failed. */
  progress: TaskProgress;
  creator: string | null;
  owner: string | null;
  created: Date;
  modified: Date;
}

/** A task's progress: the items of its input list, and of those the ones done and failed (in its latest run). */
export interface TaskProgress {
  total: number;
  done: number;
  failed: number;
}

const PROGRESS_COLUMN = `jsonb_build_object('total', progress_total, 'done', progress_done, 'failed', progress_failed) AS progress`;
/** A task's columns as `TaskRow` has them. */
export const TASK_COLS = `tid, sid, name, type, status, metadata, ${CSTATS_COLUMN}, ${PROGRESS_COLUMN}, creator, owner, created, modified`;
/** `TASK_COLS` without aggregating the item rows (a large task's are many). */
export const TASK_COLS_NO_CSTATS = `tid, sid, name, type, status, metadata, '{}'::jsonb AS cstats, ${PROGRESS_COLUMN}, creator, owner, created, modified`;

/** What a transition returns: the task's run and who may act on it. */
export type RunOwners = { run: number; creator: string | null; owner: string | null };

const OPEN = sqlList(OPEN_OUTCOMES);

// ---------------------------------------------------------------- the task rows

export interface NewTask {
  tid: string;
  sid: string;
  name: string;
  type: string | null;
  metadata: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
  /** Whom its runs act for (`task-principal.ts`); kept, never presented. */
  principal: StoredPrincipal;
}

export async function insertTask(sql: Sql, t: NewTask): Promise<TaskRow> {
  const { rows } = await sql.query<TaskRow>(
    `INSERT INTO tasks (tid, sid, name, type, metadata, creator, owner, principal) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8::jsonb)
     RETURNING ${TASK_COLS}`,
    [t.tid, t.sid, t.name, t.type, JSON.stringify(t.metadata), t.creator, t.owner, JSON.stringify(t.principal)],
  ).catch(throwSqlError);
  return rows[0]!;
}

/**
 * The task; `lock` takes its row lock (`FOR UPDATE`) for the rest of the
 * transaction; `cstats: false` leaves the item rows unread (`cstats` is `{}`).
 */
export async function getTask(sql: Sql, tid: string, opts: { lock?: boolean; cstats?: boolean } = {}): Promise<TaskRow | undefined> {
  const cols = opts.cstats === false ? TASK_COLS_NO_CSTATS : TASK_COLS;
  const { rows } = await sql.query<TaskRow>(`SELECT ${cols} FROM tasks WHERE tid = $1${opts.lock ? ' FOR UPDATE' : ''}`, [tid]);
  return rows[0];
}

export async function updateTask(sql: Sql, tid: string, change: { name: string; type: string | null; metadata: Record<string, unknown> }): Promise<TaskRow> {
  const { rows } = await sql.query<TaskRow>(
    `UPDATE tasks SET name = $2, type = $3, metadata = $4::jsonb, modified = now() WHERE tid = $1 RETURNING ${TASK_COLS}`,
    [tid, change.name, change.type, JSON.stringify(change.metadata)],
  ).catch(throwSqlError);
  return rows[0]!;
}

/**
 * Takes, for the rest of the transaction, a lock per user on the number of
 * their tasks (advisory, keyed by schema and user, taken in order), so two
 * creations for one user count one after the other (`tasks.maxPerUser`).
 */
export async function lockTaskCounts(tx: Sql, users: readonly string[]): Promise<void> {
  await tx.query(
    `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':tasks-of:' || u)) FROM (SELECT DISTINCT u FROM unnest($1::text[]) u ORDER BY u) x`,
    [users]);
}

/**
 * Counts the task's progress again from its rows: the input list's items, and
 * of those the ones whose item row is done or failed (a removed item's row
 * stays until the next start, and does not count). Run after the input list
 * changed, in the transaction that changed it, under the task's row lock
 * (creation, `TaskLists.changeInput`), when no item of it runs.
 */
export async function recountProgress(sql: Sql, tid: string): Promise<TaskProgress> {
  const { rows } = await sql.query<{ progress: TaskProgress }>(
    `UPDATE tasks k SET progress_total = c.total, progress_done = c.done, progress_failed = c.failed
     FROM (SELECT COALESCE((SELECT item_count FROM lists WHERE tid = $1 AND kind = 'input'), 0) AS total,
             count(*) FILTER (WHERE t.outcome = 'done') AS done, count(*) FILTER (WHERE t.outcome = 'failed') AS failed
           FROM task_items t JOIN lists l ON l.tid = t.tid AND l.kind = 'input' JOIN list_items li ON li.lid = l.lid AND li.id = t.item
           WHERE t.tid = $1) c
     WHERE k.tid = $1 RETURNING ${PROGRESS_COLUMN}`,
    [tid]);
  return rows[0]?.progress ?? { total: 0, done: 0, failed: 0 };
}

/** Marks the task changed (its input list changed) and counts its progress again (`recountProgress`). */
export async function touchTask(sql: Sql, tid: string): Promise<void> {
  await recountProgress(sql, tid);
  await sql.query('UPDATE tasks SET modified = now() WHERE tid = $1', [tid]);
}

/** Deletes the task; its item rows, lists and their items go with it (foreign keys cascade). */
export async function deleteTask(sql: Sql, tid: string): Promise<void> {
  await sql.query('DELETE FROM tasks WHERE tid = $1', [tid]);
}

// ---------------------------------------------------------------- transitions

/**
 * Pause and abort: moves the task to `to` when its status is one of `from`
 * (the state table's cell), under the row lock the UPDATE takes. Undefined
 * when the task is absent, in another service or in a status the action is
 * not allowed from. `hook`: the service's connector has a hook for the
 * action; it is numbered (`hook_due`) in the same statement.
 */
export async function transition(sql: Sql, sid: string, tid: string, from: readonly TaskStatus[], to: TaskStatus, hook = false): Promise<(RunOwners & { hook_due: number | null }) | undefined> {
  const { rows } = await sql.query<RunOwners & { hook_due: string | null }>(
    `UPDATE tasks SET status = $4, modified = now(), hook_due = CASE WHEN $5 THEN nextval('task_hook_seq') ELSE hook_due END
     WHERE tid = $1 AND sid = $2 AND status = ANY($3::text[]) RETURNING run, creator, owner, hook_due`,
    [tid, sid, [...from], to, hook]);
  return rows[0] && { ...rows[0], hook_due: rows[0].hook_due === null ? null : Number(rows[0].hook_due) };
}

// ---------------------------------------------------------------- action hooks (migration 028)

/** A task whose connector's action hook is owed (`hook_due`: the newest action's number). */
export interface DueHook {
  sid: string;
  tid: string;
  n: number;
}

/** Numbers the hooks of these tasks' action, in its transaction (resume: the start statement moved them). */
export async function markHooksDue(tx: Sql, tids: readonly string[]): Promise<DueHook[]> {
  const { rows } = await tx.query<{ sid: string; tid: string; n: string }>(
    `UPDATE tasks SET hook_due = nextval('task_hook_seq') WHERE tid = ANY($1::uuid[]) RETURNING sid, tid::text AS tid, hook_due AS n`, [[...tids]]);
  return rows.map((r) => ({ sid: r.sid, tid: r.tid, n: Number(r.n) }));
}

/** The task's status and owed hook number (undefined: the task is gone). */
/**
 * Whether task `tid` is in `status`, its row share-locked until the caller's
 * transaction ends: an action's change of status waits for that transaction,
 * and a transaction that locks after the change sees it. A connector's hook
 * acts on one piece of handed-off work under this guard, so a hook read
 * before a later action never acts after it (print jobs released after a
 * pause committed).
 */
export async function lockStatusIs(tx: Sql, tid: string, status: TaskStatus): Promise<boolean> {
  const { rows } = await tx.query<{ status: TaskStatus }>('SELECT status FROM tasks WHERE tid = $1 FOR SHARE', [tid]);
  return rows[0]?.status === status;
}

export async function hookState(sql: Sql, tid: string): Promise<{ status: TaskStatus; due: number | null } | undefined> {
  const { rows } = await sql.query<{ status: TaskStatus; hook_due: string | null }>('SELECT status, hook_due FROM tasks WHERE tid = $1', [tid]);
  return rows[0] && { status: rows[0].status, due: rows[0].hook_due === null ? null : Number(rows[0].hook_due) };
}

/**
 * The hook owed as `due` ran for `status`: nothing is owed any more, unless
 * the task moved or a newer action was numbered meanwhile (false: look again).
 */
export async function clearHook(sql: Sql, tid: string, due: number | null, status: TaskStatus): Promise<boolean> {
  const { rowCount } = await sql.query(
    'UPDATE tasks SET hook_due = NULL WHERE tid = $1 AND hook_due IS NOT DISTINCT FROM $2::bigint AND status = $3', [tid, due, status]);
  return rowCount > 0;
}

/** Tasks with a hook owed (the reconciler's source: a `task.hook` job Redis lost). */
export async function dueHooks(sql: Sql, limit: number): Promise<DueHook[]> {
  const { rows } = await sql.query<{ sid: string; tid: string; n: string }>(
    'SELECT sid, tid::text AS tid, hook_due AS n FROM tasks WHERE hook_due IS NOT NULL ORDER BY tid LIMIT $1', [limit]);
  return rows.map((r) => ({ sid: r.sid, tid: r.tid, n: Number(r.n) }));
}

/**
 * Takes the row locks of tasks about to start or resume (`FOR NO KEY UPDATE`,
 * in tid order, the order every statement locking several tasks keeps), in
 * the transaction that then sends `startRunStatement`. Under READ COMMITTED a
 * statement reads the snapshot it took when it began: had it waited for the
 * locks itself, an input change committed meanwhile (the change holds the
 * same lock, `getTask(tx, tid, { lock: true })`) would be missing from the
 * run's items. Taken by a statement of its own, the start's statement begins
 * after every such change committed, and later changes wait and see
 * `processing` (409).
 */
export async function lockForStart(tx: Sql, tids: readonly string[]): Promise<void> {
  await tx.query('SELECT tid FROM tasks WHERE tid = ANY($1::uuid[]) ORDER BY tid FOR NO KEY UPDATE', [[...tids]]);
}

/** One start or resume of `startRunStatement`: the task, the state table's cell and the caller's rights (`ownedBy`). */
export interface StartRequest {
  sid: string;
  tid: string;
  from: readonly TaskStatus[];
  to: TaskStatus;
  /** The identities the task's creator or owner must be among; undefined for any task. */
  ownedBy: readonly string[] | undefined;
  /** A resume whose connector has a resume hook: owed with the start (`markHooksDue`). */
  hook?: boolean;
}

/** A row `startRunStatement` returns. */
export type StartedRun = RunOwners & { n: number; chunks: number[] };

const START_RUNS_WITH = sqlFile(new URL('./statements/start-runs.sql', import.meta.url));

/**
 * Starts and resumes of different tasks (one request per task) as one
 * statement (`statements/start-runs.sql`), sent after `lockForStart` in the
 * same transaction, so the starts of
 * concurrent requests go together (`ActionService`'s `MicroBatcher`), fused
 * with one `task.items` job per chunk (`Outbox.addEachWith`). One row per
 * request that moved (`n`: its 1-based place in `requests`): the run and its
 * chunk numbers.
 */
export function startRunStatement(requests: readonly StartRequest[], perJob: number): FusedStatement & { jobs: string } {
  if (new Set(requests.map((r) => r.tid)).size !== requests.length) throw new Error('startRunStatement: one request per task');
  return {
    with: START_RUNS_WITH,
    text: `SELECT moved.n, moved.run, moved.creator, moved.owner,
       COALESCE((SELECT array_agg(c.chunk ORDER BY c.chunk) FROM chunks c WHERE c.tid = moved.tid), '{}') AS chunks
     FROM moved`,
    // the job id of JOBS['task.items'].id, `task.<tid>.<run>.<chunk>` (a test holds the two together)
    jobs: `SELECT r.prefix || main.run || '.' || c.chunk, r.payload || jsonb_build_object('run', main.run, 'chunk', c.chunk)
       FROM main JOIN r ON r.n = main.n JOIN chunks c ON c.tid = r.tid ORDER BY main.n, c.chunk`,
    params: [JSON.stringify(requests.map((q, i) => {
      const payload: Pick<JobData<'task.items'>, 'sid' | 'tid'> = { sid: q.sid, tid: q.tid };
      return { n: i + 1, tid: q.tid, sid: q.sid, from: q.from, to: q.to, owned: q.ownedBy ?? null, payload, prefix: `task.${q.tid}.` };
    })), perJob],
  };
}

/** Pause and abort: every open item takes `outcome` (a running item's own report of it is then moot). */
export async function closeOpenItems(sql: Sql, tid: string, outcome: 'paused' | 'aborted', message: string): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE task_items SET outcome = $2, state = $2, message = $3, updated = now() WHERE tid = $1 AND outcome IN (${OPEN})`,
    [tid, outcome, message]);
  return rowCount;
}

/** The NOTIFY channel on which pause and abort reach every worker process (`ItemInterrupts` listens). */
export const INTERRUPT_CHANNEL = 'task_interrupts';

/** Pause and abort: the interrupt, sent with the action's transaction (delivered only if it commits). */
export async function notifyInterrupt(tx: Sql, tid: string, run: number, by: 'pause' | 'abort'): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [INTERRUPT_CHANNEL, `${tid} ${run} ${by}`]);
}

/**
 * The status derivation of `derivedStatus` as one statement: the task moves
 * from processing to completed (every item done) or failed (anything else
 * final) when no item is open; undefined when it did not move.
 */
export async function settleTask(sql: Sql, tid: string): Promise<TaskStatus | undefined> {
  const { rows } = await sql.query<{ status: TaskStatus }>(
    `UPDATE tasks SET status = CASE WHEN EXISTS (SELECT 1 FROM task_items WHERE tid = $1 AND outcome <> 'done') THEN $2 ELSE $3 END,
       modified = now()
     WHERE tid = $1 AND status = 'processing' AND NOT EXISTS (SELECT 1 FROM task_items WHERE tid = $1 AND outcome IN (${OPEN}))
     RETURNING status`,
    [tid, derivedStatus({ failed: 1 }), derivedStatus({})]);
  return rows[0]?.status;
}

/**
 * `settleTask` for every processing task with no open item: the ones whose
 * last report committed but whose worker died before settling them (the
 * reconcile pass runs it). Returns how many moved.
 */
export async function settleStranded(sql: Sql): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE tasks k SET status = CASE WHEN EXISTS (SELECT 1 FROM task_items WHERE tid = k.tid AND outcome <> 'done') THEN $1 ELSE $2 END,
       modified = now()
     WHERE k.status = 'processing' AND NOT EXISTS (SELECT 1 FROM task_items WHERE tid = k.tid AND outcome IN (${OPEN}))`,
    [derivedStatus({ failed: 1 }), derivedStatus({})]);
  return rowCount;
}

// ---------------------------------------------------------------- item reports

/** Which stored outcomes a report may replace: nothing final is ever changed, and a late "running" does not undo a pause. */
const REPLACES: Readonly<Record<ItemReport['outcome'], string>> = {
  running: `'queued', 'running'`,
  paused: OPEN,
  done: OPEN,
  failed: OPEN,
  aborted: OPEN,
};

/**
 * Stores one report on its item's row (never the task's). False when the
 * row is final already or belongs to another run: a duplicate or late job
 * must not change it (and its side effect must not happen).
 */
export async function writeReport(sql: Sql, tid: string, run: number, r: ItemReport): Promise<boolean> {
  const update = `UPDATE task_items SET outcome = $4, job_id = $5, state = $6, href = COALESCE($7, href), message = $8, updated = now()
     WHERE tid = $1 AND item = $2 AND run = $3 AND outcome IN (${REPLACES[r.outcome]})`;
  const params = [tid, r.item, run, r.outcome, r.jobId, r.state.slice(0, 200), r.href ?? null, r.message?.slice(0, 2000) ?? null];
  // a report that is not final touches only its item's row (a thousand items reporting never contend on the task's)
  if (!isFinal(r.outcome)) return (await sql.query(update, params)).rowCount > 0;
  return countedFinal(sql, update, params);
}

const isFinal = (o: ItemReport['outcome']) => (FINAL_OUTCOMES as readonly string[]).includes(o);

/**
 * A final report's `UPDATE task_items … WHERE … AND tid = $1` (RETURNING
 * nothing) as one statement that takes the task's row lock first (the order
 * of the final reports, pause and abort) and counts the applied outcome into
 * the task's progress. True when the report was applied.
 */
async function countedFinal(sql: Sql, update: string, params: unknown[]): Promise<boolean> {
  const { rows } = await sql.query<{ applied: boolean }>(
    `WITH lk AS (SELECT count(*) AS locked FROM (SELECT tid FROM tasks WHERE tid = $1 FOR NO KEY UPDATE) x),
       rep AS (${update.replace('WHERE tid = $1', 'WHERE (SELECT locked FROM lk) IS NOT NULL AND tid = $1')} RETURNING outcome),
       counted AS (UPDATE tasks SET progress_done = progress_done + (SELECT count(*) FROM rep WHERE outcome = 'done'),
           progress_failed = progress_failed + (SELECT count(*) FROM rep WHERE outcome = 'failed')
         WHERE tid = $1 AND EXISTS (SELECT 1 FROM rep))
     SELECT EXISTS (SELECT 1 FROM rep) AS applied`,
    params);
  return rows[0]?.applied === true;
}

/**
 * A report from outside a job (a handed-off print job changed state): applied
 * to the item's row under the task's current run, with the same refusals as
 * `writeReport`.
 */
export async function writeLateReport(sql: Sql, tid: string, r: ItemReport): Promise<boolean> {
  const update = `UPDATE task_items SET outcome = $3, job_id = $4, state = $5, href = COALESCE($6, href), message = $7, updated = now()
     WHERE tid = $1 AND item = $2 AND run = (SELECT run FROM tasks WHERE tid = $1) AND outcome IN (${REPLACES[r.outcome]})`;
  const params = [tid, r.item, r.outcome, r.jobId, r.state.slice(0, 200), r.href ?? null, r.message?.slice(0, 2000) ?? null];
  if (!isFinal(r.outcome)) return (await sql.query(update, params)).rowCount > 0;
  return countedFinal(sql, update, params);
}

/** One final report of `writeFinalReports`: the item's task, run, report and the connector's effect as data. */
export interface FinalReport {
  sid: string;
  tid: string;
  run: number;
  report: ItemReport;
  effect: StateEffect | undefined;
}

if (FINAL_OUTCOMES.some((o) => REPLACES[o as ItemReport['outcome']] !== OPEN)) throw new Error('writeFinalReports: a final report replaces every open outcome');

/** `statements/write-final-reports.sql` with the connector's effects (written by the state store) in place of its placeholder. */
const FINAL_REPORTS_SQL = withEffects(
  sqlFile(new URL('./statements/write-final-reports.sql', import.meta.url)),
  effectsSql('SELECT i.n, i.e_sid AS sid, i.e_op AS op, i.e_key AS key, i.e_value AS value FROM i JOIN rep ON rep.n = i.n WHERE i.e_op IS NOT NULL'),
);

function withEffects(statement: string, effects: string): string {
  const [before, after, ...more] = statement.split('{{effects}}');
  if (after === undefined || more.length > 0) throw new Error('write-final-reports.sql: expected one effects placeholder');
  return `${before}${effects}${after}`;
}

/**
 * Final reports (done, failed, aborted) of items of different tasks (one per
 * task), each with the connector's effect given as data and its task's
 * status derivation, as one autocommitted statement
 * (`statements/write-final-reports.sql`), so the reports of jobs finishing at
 * about the same time go together (`ItemRunner`'s `MicroBatcher`). Per
 * report, exactly as on its own: stored as by `writeReport`, the effect
 * applied only when it is, and when no other item of the task is open the
 * task settles (as `settleTask`). `settled` is undefined when the task did
 * not move: then another item looked open to this statement, which may have
 * finished concurrently (its commit after this statement's snapshot), so the
 * caller settles once more after this commit (`settleTask`), as every
 * finishing job does: of two finishing at once, the later settle sees both.
 */
export async function writeFinalReports(sql: Sql, reports: readonly FinalReport[]): Promise<{ applied: boolean; settled: TaskStatus | undefined }[]> {
  if (new Set(reports.map((f) => f.tid)).size !== reports.length) throw new Error('writeFinalReports: one report per task');
  const col = <T>(f: (x: FinalReport) => T) => reports.map(f);
  const { rows } = await sql.query<{ applied: boolean; settled: TaskStatus | null }>(FINAL_REPORTS_SQL, [
    col((f) => f.tid), col((f) => f.report.item), col((f) => f.run), col((f) => f.report.outcome), col((f) => f.report.jobId),
    col((f) => f.report.state.slice(0, 200)), col((f) => f.report.href ?? null), col((f) => f.report.message?.slice(0, 2000) ?? null),
    derivedStatus({ failed: 1 }), derivedStatus({}),
    ...effectColumns(reports.map((f) => f.effect && { sid: f.sid, effect: f.effect }))]);
  return rows.map((r) => ({ applied: r.applied, settled: r.settled ?? undefined }));
}

/** `runItem` returned with the item still open: it runs elsewhere now (its reports come through the ItemReporter). */
export async function markHandedOff(sql: Sql, tid: string, item: string, run: number): Promise<void> {
  await sql.query(
    `UPDATE task_items SET handed_off = true WHERE tid = $1 AND item = $2 AND run = $3 AND outcome IN ('queued', 'running')`,
    [tid, item, run]);
}

/** `abandon`: the open items of one job fail with the reason. */
export async function failChunk(sql: Sql, tid: string, run: number, chunk: number, message: string): Promise<number> {
  // the task's row first (the lock order of final reports), then its items; the failed ones count into its progress
  const { rows } = await sql.query<{ n: number }>(
    `WITH lk AS (SELECT count(*) AS locked FROM (SELECT tid FROM tasks WHERE tid = $1 FOR NO KEY UPDATE) x),
       f AS (UPDATE task_items SET outcome = 'failed', state = 'failed', message = $4, updated = now()
         WHERE (SELECT locked FROM lk) IS NOT NULL AND tid = $1 AND run = $2 AND chunk = $3 AND outcome IN ('queued', 'running') AND NOT handed_off
         RETURNING 1),
       counted AS (UPDATE tasks SET progress_failed = progress_failed + (SELECT count(*) FROM f) WHERE tid = $1 AND EXISTS (SELECT 1 FROM f))
     SELECT count(*)::int AS n FROM f`,
    [tid, run, chunk, message.slice(0, 2000)]);
  return rows[0]?.n ?? 0;
}

/**
 * What became of the handed-off work of an item its task's abort closed
 * (`aborted`, final): the state, href and message of the report are shown
 * in `cstats`, the outcome stays `aborted` (a print job that was being
 * delivered when the task was aborted, then printed). False when the row is
 * not aborted under `run`.
 */
export async function noteAbortedItem(sql: Sql, tid: string, run: number, r: ItemReport): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE task_items SET job_id = $4, state = $5, href = COALESCE($6, href), message = $7, updated = now()
     WHERE tid = $1 AND item = $2 AND run = $3 AND outcome = 'aborted'`,
    [tid, r.item, run, r.jobId, r.state.slice(0, 200), r.href ?? null, r.message?.slice(0, 2000) ?? null]);
  return rowCount > 0;
}
