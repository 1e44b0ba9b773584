import type { ItemOutcome, TaskAction } from '../../../connectors/facets/tasks.js';

/**
 * Task statuses and actions as data (DESIGN.md section 6, "Tasks"): the
 * action service, migration 007 (the `tasks.status` CHECK) and the tests all
 * read these tables; nothing else decides which action is allowed when.
 */
export const TASK_STATUSES = ['idle', 'processing', 'paused', 'completed', 'failed', 'aborted'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

/** Per action: the statuses it is allowed from, and the status it leads to. */
export const TASK_TRANSITIONS: Readonly<Record<TaskAction, { from: readonly TaskStatus[]; to: TaskStatus }>> = {
  start: { from: ['idle', 'completed', 'failed', 'aborted'], to: 'processing' },
  pause: { from: ['processing'], to: 'paused' },
  resume: { from: ['paused'], to: 'processing' },
  abort: { from: ['processing', 'paused'], to: 'aborted' },
};

/** A task is active (cannot be deleted, its documents are in use) while processing. */
export const ACTIVE_STATUSES: readonly TaskStatus[] = ['processing'];


/**
 * Per-item outcomes as stored in `task_items`: the connector's `ItemOutcome`
 * plus `queued` (not picked up yet in this run). Open ones still count as
 * work to do; final ones are never redone by a retried or reconciled job.
 */
export const ITEM_OUTCOMES = ['queued', 'running', 'paused', 'done', 'failed', 'aborted'] as const satisfies readonly (ItemOutcome | 'queued')[];
export type ItemRowOutcome = (typeof ITEM_OUTCOMES)[number];
export const OPEN_OUTCOMES: readonly ItemRowOutcome[] = ['queued', 'running', 'paused'];
export const FINAL_OUTCOMES: readonly ItemRowOutcome[] = ['done', 'failed', 'aborted'];

/**
 * The status a processing task ends in once none of its items is open: all
 * done -> completed; anything else (failed, or aborted by the connector on its
 * own) -> failed. Undefined while items are open.
 */
export function derivedStatus(counts: Partial<Record<ItemRowOutcome, number>>): TaskStatus | undefined {
  if (OPEN_OUTCOMES.some((o) => (counts[o] ?? 0) > 0)) return undefined;
  return (counts.failed ?? 0) + (counts.aborted ?? 0) > 0 ? 'failed' : 'completed';
}

/** SQL list literal of fixed identifiers from these tables (never user input). */
export const sqlList = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');
