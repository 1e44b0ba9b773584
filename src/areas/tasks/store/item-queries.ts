import type { Sql } from '../../../storage/driver/database.js';
import type { ItemRowOutcome } from '../actions/task-states.js';
import type { StoredPrincipal } from '../task-principal.js';

/**
 * Reads of a task's per-item rows (`task_items`): what a `task.items` job
 * takes, what the connector's hooks and `cstats` are shown, what the
 * reconciler looks for. The rows are written by `task-store.ts` alone.
 */

/** One item's row: its run and chunk, and the connector's last report. */
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

/** One item of a chunk with what its effective metadata is merged from. */
export interface ChunkItem {
  item: string;
  position: number;
  href: string;
  task_metadata: Record<string, unknown>;
  item_metadata: Record<string, unknown>;
  list_metadata: Record<string, unknown>;
  doc_metadata: Record<string, unknown> | null;
  /** The repository document the href names (`docRef`), or null for a URL. */
  doc_sid: string | null;
  doc_uuid: string | null;
  /** The document's row as the rights need it, or null when it is gone (or never was). */
  doc: { creator: string | null; owner: string | null; parent: string | null } | null;
  /** Whom the task's run acts for, with what it falls back on (`runAs`). */
  creator: string | null;
  owner: string | null;
  principal: StoredPrincipal | null;
}

/** One `task.items` job's chunk: the task, its run and the chunk's number. */
export interface ChunkRef {
  tid: string;
  run: number;
  chunk: number;
}

/**
 * The open items of jobs of runs, per chunk of `chunks` (in its order): each
 * chunk's items in list order, with the document's metadata and owners when
 * the href names one (the run checks its rights first) and the task's
 * principal; none unless the task still processes that run (paused,
 * aborted, restarted or deleted meanwhile). One statement for every chunk,
 * so the chunk reads of jobs starting at about the same time go together
 * (`ItemRunner`'s `MicroBatcher`). A read: the first item is taken on this
 * very answer (as `itemOpen` would), the others are checked again when their
 * turn comes.
 */
export async function chunkItems(sql: Sql, chunks: readonly ChunkRef[]): Promise<ChunkItem[][]> {
  const { rows } = await sql.query<ChunkItem & { n: string }>(
    `SELECT c.n, t.item, li.position, li.href, k.metadata AS task_metadata, li.metadata AS item_metadata,
       l.metadata AS list_metadata, e.metadata AS doc_metadata, li.doc_sid, li.doc_uuid,
       CASE WHEN e.uuid IS NOT NULL THEN json_build_object('creator', e.creator, 'owner', e.owner, 'parent', e.parent) END AS doc,
       k.creator, k.owner, k.principal
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
 * `writeReport` / `writeFinalReports` store only on a row still open under the
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
