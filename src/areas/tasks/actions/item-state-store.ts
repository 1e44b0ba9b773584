import type { ItemReport, StateEffect } from '../../../connectors/facets/tasks.js';
import { effectColumns, effectsSql } from '../../../connectors/lifecycle/state-store.js';
import type { FusedStatement } from '../../../outbox/outbox.js';
import type { JobData } from '../../../queue/jobs.js';
import type { Sql } from '../../../storage/driver/database.js';
import { OPEN_OUTCOMES, derivedStatus, sqlList, type ItemRowOutcome, type TaskStatus } from './task-states.js';

/**
 * All SQL of task actions: the task's status and run counter, and the
 * per-item rows (`task_items`, migration 007). Reports touch only their own
 * item's row, in one small statement.
 */

export interface ActionTaskRow {
  tid: string;
  sid: string;
  status: TaskStatus;
  run: number;
  metadata: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
}

export interface ItemRow {
  item: string;
  run: number;
  outcome: ItemRowOutcome;
  job_id: string | null;
  state: string | null;
  href: string | null;
  message: string | null;
  updated: Date;
}

const OPEN = sqlList(OPEN_OUTCOMES);

export async function getTask(sql: Sql, tid: string, lock = false): Promise<ActionTaskRow | undefined> {
  const { rows } = await sql.query<ActionTaskRow>(
    `SELECT tid, sid, status, run, metadata, creator, owner FROM tasks WHERE tid = $1${lock ? ' FOR UPDATE' : ''}`, [tid]);
  return rows[0];
}

/**
 * Pause and abort: moves the task to `to` when its status is one of `from`
 * (the state table's cell), under the row lock the UPDATE takes. Undefined
 * when the task is absent, in another service or in a status the action is
 * not allowed from.
 */
export async function transition(
  sql: Sql, sid: string, tid: string, from: readonly TaskStatus[], to: TaskStatus,
): Promise<Pick<ActionTaskRow, 'run' | 'creator' | 'owner'> | undefined> {
  const { rows } = await sql.query<Pick<ActionTaskRow, 'run' | 'creator' | 'owner'>>(
    `UPDATE tasks SET status = $4, modified = now()
     WHERE tid = $1 AND sid = $2 AND status = ANY($3::text[]) RETURNING run, creator, owner`,
    [tid, sid, [...from], to]);
  return rows[0];
}

/** One start or resume of `startRunStatement`: the task, the state table's cell and the caller's rights (`ownedBy`). */
export interface StartRequest {
  sid: string;
  tid: string;
  from: readonly TaskStatus[];
  to: TaskStatus;
  /** The identities the task's creator or owner must be among; undefined for any task. */
  ownedBy: readonly string[] | undefined;
}

/**
 * Starts and resumes of different tasks (one request per task) as one
 * autocommitted statement, so the starts of concurrent requests go together
 * (`ActionService`'s `MicroBatcher`). Per request, exactly as on its own: the
 * transition of `transition` (a new run), the run's item rows and one
 * `task.items` job per chunk (the outbox rows, through
 * `Outbox.addEachWith`). Every input item that is not done is queued again
 * under the new run, in chunks of `perJob` by list position; rows of items
 * no longer in the input list are dropped; done items keep their row and are
 * not redone. The caller's rights are part of the transition's WHERE
 * (`ownedBy`), so nothing changes unless the action is allowed. The tasks'
 * rows are locked first, all of them, in the order of their ids (as
 * `writeFinalReports` does), so no two such statements, nor one and a final
 * report, wait for each other in a cycle. One row per request that moved
 * (`n`: its 1-based place in `requests`): the run and its chunk numbers.
 */
export function startRunStatement(requests: readonly StartRequest[], perJob: number): FusedStatement & { jobs: string } {
  if (new Set(requests.map((r) => r.tid)).size !== requests.length) throw new Error('startRunStatement: one request per task');
  return {
    with: START_RUN_WITH,
    text: START_RUN_TEXT,
    // the job id of JOBS['task.items'].id, `task.<tid>.<run>.<chunk>` (a test holds the two together)
    jobs: `SELECT r.prefix || main.run || '.' || c.chunk, r.payload || jsonb_build_object('run', main.run, 'chunk', c.chunk)
       FROM main JOIN r ON r.n = main.n JOIN chunks c ON c.tid = r.tid ORDER BY main.n, c.chunk`,
    params: [JSON.stringify(requests.map((q, i) => {
      const payload: Pick<JobData<'task.items'>, 'sid' | 'tid'> = { sid: q.sid, tid: q.tid };
      return { n: i + 1, tid: q.tid, sid: q.sid, from: q.from, to: q.to, owned: q.ownedBy ?? null, payload, prefix: `task.${q.tid}.` };
    })), perJob],
  };
}

const START_RUN_WITH = `r AS (SELECT * FROM jsonb_to_recordset($1::jsonb)
       AS r(n int, tid uuid, sid text, "from" text[], "to" text, owned text[], payload jsonb, prefix text)),
     -- the tasks' rows by their ids (= ANY of an array: the planner expects a few rows and takes the primary
     -- key; joined to r, whose row count it cannot know, it took a sequential scan of the table instead)
     lk AS (SELECT count(*) AS locked FROM (SELECT tid FROM tasks WHERE tid = ANY(ARRAY(SELECT tid FROM r)) ORDER BY tid FOR NO KEY UPDATE) x),
     moved AS (
       UPDATE tasks k SET status = r."to", run = k.run + 1, modified = now()
       FROM r
       WHERE (SELECT locked FROM lk) IS NOT NULL AND k.tid = ANY(ARRAY(SELECT tid FROM r)) AND k.tid = r.tid AND k.sid = r.sid AND k.status = ANY(r."from")
         AND (r.owned IS NULL OR k.creator = ANY(r.owned) OR k.owner = ANY(r.owned))
       RETURNING r.n, k.tid, k.run, k.creator, k.owner),
     input AS (
       SELECT moved.tid, li.id, li.position FROM moved JOIN lists l ON l.tid = moved.tid AND l.kind = 'input' JOIN list_items li ON li.lid = l.lid),
     gone AS (
       DELETE FROM task_items t USING moved WHERE t.tid = moved.tid
         AND NOT EXISTS (SELECT 1 FROM input WHERE input.tid = t.tid AND input.id = t.item)),
     todo AS (
       SELECT input.tid, input.id, (row_number() OVER (PARTITION BY input.tid ORDER BY input.position, input.id) - 1) / $2 AS chunk
       FROM input LEFT JOIN task_items t ON t.tid = input.tid AND t.item = input.id
       WHERE t.outcome IS NULL OR t.outcome <> 'done'),
     queued AS (
       INSERT INTO task_items (tid, item, run, chunk, outcome, state, message)
       SELECT todo.tid, todo.id, moved.run, todo.chunk, 'queued', 'queued', NULL FROM todo JOIN moved ON moved.tid = todo.tid
       ON CONFLICT (tid, item) DO UPDATE SET run = EXCLUDED.run, chunk = EXCLUDED.chunk, outcome = 'queued',
         handed_off = false, state = 'queued', message = NULL, updated = now()
       -- checked on the row's latest version: an item whose final report committed while this
       -- statement ran (after its snapshot) stays done and is not run again
       WHERE task_items.outcome <> 'done'
       RETURNING tid, chunk),
     chunks AS (SELECT DISTINCT tid, chunk::int AS chunk FROM queued)`;

const START_RUN_TEXT = `SELECT moved.n, moved.run, moved.creator, moved.owner,
       COALESCE((SELECT array_agg(c.chunk ORDER BY c.chunk) FROM chunks c WHERE c.tid = moved.tid), '{}') AS chunks
     FROM moved`;

/** A row `startRunStatement` returns. */
export type StartedRun = Pick<ActionTaskRow, 'run' | 'creator' | 'owner'> & { n: number; chunks: number[] };

/** Pause and abort: every open item takes `outcome` (a running item's own report of it is then moot). */
export async function closeOpenItems(sql: Sql, tid: string, outcome: 'paused' | 'aborted', message: string): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE task_items SET outcome = $2, state = $2, message = $3, updated = now() WHERE tid = $1 AND outcome IN (${OPEN})`,
    [tid, outcome, message]);
  return rowCount;
}

/** One item of a chunk with what its effective metadata is merged from. */
export interface ChunkItem {
  item: string;
  position: number;
  href: string;
  task_metadata: Record<string, unknown>;
  item_metadata: Record<string, unknown>;
  list_metadata: Record<string, unknown>;
  doc_metadata: Record<string, unknown> | null;
}

/** One `task.items` job's chunk: the task, its run and the chunk's number. */
export interface ChunkRef {
  tid: string;
  run: number;
  chunk: number;
}

/**
 * The open items of jobs of runs, per chunk of `chunks` (in its order): each
 * chunk's items in list order, with the document's metadata when the href
 * names one; none unless the task still processes that run (paused,
 * aborted, restarted or deleted meanwhile). One statement for every chunk,
 * so the chunk reads of jobs starting at about the same time go together
 * (`ItemRunner`'s `MicroBatcher`). A read: the first item is taken on this
 * very answer (as `itemOpen` would), the others are checked again when their
 * turn comes.
 */
export async function chunkItems(sql: Sql, chunks: readonly ChunkRef[]): Promise<ChunkItem[][]> {
  const { rows } = await sql.query<ChunkItem & { n: string }>(
    `SELECT c.n, t.item, li.position, li.href, k.metadata AS task_metadata, li.metadata AS item_metadata,
       l.metadata AS list_metadata, e.metadata AS doc_metadata
     FROM unnest($1::uuid[], $2::int[], $3::int[]) WITH ORDINALITY AS c(tid, run, chunk, n)
     JOIN task_items t ON t.tid = c.tid AND t.run = c.run AND t.chunk = c.chunk
     -- the tasks by their ids (= ANY: the primary key), the status checked on the row (IS TRUE: not
     -- a condition tasks_status can serve); left to the planner, it read every processing task through
     -- tasks_status, dead entries of earlier updates and all
     JOIN tasks k ON k.tid = t.tid AND k.run = t.run AND (k.status = 'processing') IS TRUE AND k.tid = ANY($1::uuid[])
     JOIN list_items li ON li.id = t.item
     JOIN lists l ON l.lid = li.lid
     LEFT JOIN entries e ON e.uuid = li.doc_uuid AND e.sid = li.doc_sid
     WHERE t.outcome IN ('queued', 'running') AND NOT t.handed_off
     ORDER BY c.n, li.position, li.id`,
    [chunks.map((c) => c.tid), chunks.map((c) => c.run), chunks.map((c) => c.chunk)]);
  const out: ChunkItem[][] = chunks.map(() => []);
  for (const { n, ...item } of rows) out[Number(n) - 1]!.push(item);
  return out;
}

/**
 * Whether an item may be taken for this run: still queued or running (a
 * re-delivered job) under `run`, not handed off, while the task processes the
 * same run. A read, not a write: taking an item changes nothing, because
 * nothing depends on it. Exactly once rests on the final report, which
 * `writeReport` / `writeFinalReport` store only on a row still open under the
 * run (with the effect in the same statement or transaction), so a pause or
 * abort that commits after this check lets the item's work finish at most
 * once and a duplicate job's report is refused. The row says `queued` until
 * the connector's first report (`cstats` shows `queued` as `running`).
 */
export async function itemOpen(sql: Sql, tid: string, item: string, run: number): Promise<boolean> {
  const { rows } = await sql.query<{ open: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM task_items t JOIN tasks k ON k.tid = t.tid AND k.run = t.run AND k.status = 'processing'
       WHERE t.tid = $1 AND t.item = $2 AND t.run = $3 AND t.outcome IN ('queued', 'running') AND NOT t.handed_off) AS open`,
    [tid, item, run]);
  return rows[0]!.open;
}

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
  const { rowCount } = await sql.query(
    `UPDATE task_items SET outcome = $4, job_id = $5, state = $6, href = COALESCE($7, href), message = $8, updated = now()
     WHERE tid = $1 AND item = $2 AND run = $3 AND outcome IN (${REPLACES[r.outcome]})`,
    [tid, r.item, run, r.outcome, r.jobId, r.state.slice(0, 200), r.href ?? null, r.message?.slice(0, 2000) ?? null]);
  return rowCount > 0;
}

/** One final report of `writeFinalReports`: the item's task, run, report and the connector's effect as data. */
export interface FinalReport {
  sid: string;
  tid: string;
  run: number;
  report: ItemReport;
  effect: StateEffect | undefined;
}

/**
 * Final reports (done, failed, aborted) of items of different tasks (one per
 * task), each with the connector's effect given as data and its task's
 * status derivation, as one autocommitted statement, so the reports of jobs
 * finishing at about the same time go together (`ItemRunner`'s
 * `MicroBatcher`). Per report, exactly as on its own: the report is stored
 * as by `writeReport` (only on a row still open under the run: a final row
 * refuses a second report), the effect applied only when it is (effects of
 * one key add up, or the last `put` wins), and when no other item of the
 * task is open the task moves to completed or failed (as `settleTask`). The
 * tasks' rows are locked first, in the order of their ids (before the
 * items', the order the actions take), so neither a pause or abort nor
 * another such statement ever deadlocks with it. Per report, `settled` is
 * the new status; undefined when the task did not move: then another item
 * looked open to this statement, which may have finished concurrently (its
 * commit after this statement's snapshot), so the caller settles once more
 * after this commit (`settleTask`), as every finishing job does: of two
 * finishing at once, the later settle sees both.
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

const FINAL_OUTCOMES: readonly ItemReport['outcome'][] = ['done', 'failed', 'aborted'];
if (FINAL_OUTCOMES.some((o) => REPLACES[o] !== OPEN)) throw new Error('writeFinalReports: a final report replaces every open outcome');

/** The statement of `writeFinalReports` (one text: the same prepared statement for every batch). */
const FINAL_REPORTS_SQL = `WITH i AS (SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
         $11::text[], $12::text[], $13::text[], $14::text[]) WITH ORDINALITY AS i(tid, item, run, outcome, job_id, state, href, message, e_sid, e_op, e_key, e_value, n)),
     k AS MATERIALIZED (SELECT tid FROM tasks WHERE tid IN (SELECT tid FROM i) ORDER BY tid FOR NO KEY UPDATE),
     -- every task row is locked before anything else is touched (an InitPlan runs before the first row)
     lk AS (SELECT count(*) AS locked FROM k),
     rep AS (
       UPDATE task_items t SET outcome = i.outcome, job_id = i.job_id, state = i.state, href = COALESCE(i.href, t.href), message = i.message, updated = now()
       FROM i JOIN k ON k.tid = i.tid
       WHERE (SELECT locked FROM lk) IS NOT NULL AND t.tid = i.tid AND t.item = i.item AND t.run = i.run AND t.outcome IN (${OPEN}) AND i.outcome IN (${sqlList(FINAL_OUTCOMES)})
       RETURNING i.n),
     ${effectsSql('SELECT i.n, i.e_sid AS sid, i.e_op AS op, i.e_key AS key, i.e_value AS value FROM i JOIN rep ON rep.n = i.n WHERE i.e_op IS NOT NULL')},
     settled AS (
       UPDATE tasks x SET status = CASE WHEN r.outcome <> 'done' OR EXISTS (SELECT 1 FROM task_items WHERE tid = r.tid AND item <> r.item AND outcome <> 'done')
           THEN $9 ELSE $10 END, modified = now()
       FROM (SELECT i.tid, i.item, i.run, i.outcome FROM i JOIN rep ON rep.n = i.n) r
       WHERE x.tid = r.tid AND x.status = 'processing' AND x.run = r.run
         AND NOT EXISTS (SELECT 1 FROM task_items WHERE tid = r.tid AND item <> r.item AND outcome IN (${OPEN}))
       RETURNING x.tid, x.status)
     SELECT EXISTS (SELECT 1 FROM rep WHERE rep.n = i.n) AS applied, (SELECT status FROM settled WHERE settled.tid = i.tid) AS settled
     FROM i ORDER BY i.n`;

/** `runItem` returned with the item still open: it runs elsewhere now (its reports come through the ItemReporter). */
export async function markHandedOff(sql: Sql, tid: string, item: string, run: number): Promise<void> {
  await sql.query(
    `UPDATE task_items SET handed_off = true WHERE tid = $1 AND item = $2 AND run = $3 AND outcome IN ('queued', 'running')`,
    [tid, item, run]);
}

/**
 * A report from outside a job (a handed-off print job changed state): applied
 * to the item's row under the task's current run, with the same refusals as
 * `writeReport`.
 */
export async function writeLateReport(sql: Sql, tid: string, r: ItemReport): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE task_items SET outcome = $3, job_id = $4, state = $5, href = COALESCE($6, href), message = $7, updated = now()
     WHERE tid = $1 AND item = $2 AND run = (SELECT run FROM tasks WHERE tid = $1) AND outcome IN (${REPLACES[r.outcome]})`,
    [tid, r.item, r.outcome, r.jobId, r.state.slice(0, 200), r.href ?? null, r.message?.slice(0, 2000) ?? null]);
  return rowCount > 0;
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

export async function outcomeCounts(sql: Sql, tid: string): Promise<Partial<Record<ItemRowOutcome, number>>> {
  const { rows } = await sql.query<{ outcome: ItemRowOutcome; n: number }>(
    'SELECT outcome, count(*)::int AS n FROM task_items WHERE tid = $1 GROUP BY outcome', [tid]);
  return Object.fromEntries(rows.map((r) => [r.outcome, r.n]));
}

/**
 * `cstats` as a column of a task query (`FROM tasks`): the reported item rows
 * as one JSON object keyed by job id, shaped as `presentCstats` shapes them.
 * The task store selects it instead of the old `tasks.cstats` column.
 */
export const CSTATS_COLUMN = `COALESCE((SELECT jsonb_object_agg(i.job_id, jsonb_build_object(
    'state', COALESCE(i.state, i.outcome), 'item', i.item, 'href', i.href,
    'updated', to_char(i.updated AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'message', i.message))
  FROM task_items i WHERE i.tid = tasks.tid AND i.job_id IS NOT NULL), '{}'::jsonb) AS cstats`;

/** The rows `cstats` is presented from: items a connector has reported on. */
export async function reportedItems(sql: Sql, tid: string): Promise<ItemRow[]> {
  const { rows } = await sql.query<ItemRow>(
    `SELECT item, run, outcome, job_id, state, href, message, updated FROM task_items WHERE tid = $1 AND job_id IS NOT NULL ORDER BY job_id`, [tid]);
  return rows;
}

/** Reconcile source: each (task, run, chunk) of a processing task that still has items queued or running. */
export async function pendingChunks(sql: Sql, limit: number): Promise<{ sid: string; tid: string; run: number; chunk: number }[]> {
  const { rows } = await sql.query<{ sid: string; tid: string; run: number; chunk: number }>(
    `SELECT DISTINCT k.sid, t.tid, t.run, t.chunk
     FROM task_items t JOIN tasks k ON k.tid = t.tid AND k.run = t.run
     WHERE k.status = 'processing' AND t.outcome IN ('queued', 'running') AND NOT t.handed_off
     ORDER BY t.tid, t.chunk LIMIT $1`, [limit]);
  return rows;
}

/** `abandon`: the open items of one job fail with the reason. */
export async function failChunk(sql: Sql, tid: string, run: number, chunk: number, message: string): Promise<number> {
  const { rowCount } = await sql.query(
    `UPDATE task_items SET outcome = 'failed', state = 'failed', message = $4, updated = now()
     WHERE tid = $1 AND run = $2 AND chunk = $3 AND outcome IN ('queued', 'running') AND NOT handed_off`,
    [tid, run, chunk, message.slice(0, 2000)]);
  return rowCount;
}
