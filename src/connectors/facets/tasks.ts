import type { ConnectorPorts } from '../ports.js';

/** The task actions of the Workflow API; a service offers a subset (404 for the rest). */
export const TASK_ACTIONS = ['start', 'pause', 'resume', 'abort'] as const;
export type TaskAction = (typeof TASK_ACTIONS)[number];

/**
 * How an item's connector state counts toward the task's status (DESIGN.md
 * section 6, "Tasks"): every item `done` -> completed; any `failed` and none
 * `running` -> failed; `paused` / `aborted` follow the task's action.
 */
export type ItemOutcome = 'running' | 'paused' | 'done' | 'failed' | 'aborted';

/**
 * One entry of a task's `cstats`, keyed by `jobId`:
 * `{ "<jobId>": { state, item, href, updated, message } }`. `updated` is set by
 * the store when the report is written.
 */
export interface ItemReport {
  /** The connector's job id for this item: stable across re-runs (derive it from tid and item id). */
  jobId: string;
  /** The input item's id. */
  item: string;
  /** What the item is now, in the connector's own words (a print job's state, "converting", ...). */
  state: string;
  outcome: ItemOutcome;
  /** Where the result or the handed-off job can be seen (an output document, a print job). */
  href?: string;
  message?: string;
}

/** Per-item state back to the task (the tasks area stores it in `cstats` and derives the status). */
export interface ItemReporter {
  report(tid: string, report: ItemReport): Promise<void>;
}

/** One input item as the connector works on it. */
export interface TaskItem {
  sid: string;
  tid: string;
  /** The input item's id (a UUID; stays with the item when others are removed). */
  id: string;
  index: number;
  /** Repository path (`/v1/services/<sid>/repo/<uuid>`) or http(s) URL. */
  href: string;
  /**
   * Effective metadata, merged lowest priority first: repository document,
   * task, input list, item (DESIGN.md section 6).
   */
  metadata: Readonly<Record<string, unknown>>;
}

/** Why an item's signal aborted: the task's action, or this process shutting down (the item runs again later). */
export type Interruption = 'pause' | 'abort' | 'shutdown';

/** The `reason` of an aborted item signal. */
export class ItemInterrupted extends Error {
  override readonly name = 'ItemInterrupted';
  constructor(readonly by: Interruption) {
    super(`item interrupted: ${by}`);
  }
}

/**
 * A change to the service's state store given as data: applied by the final
 * report's own statement (one round trip for report, effect and, when it is
 * the task's last item, the task's status), and only when the report is.
 */
export type StateEffect =
  | { op: 'increment'; key: string; by?: number }
  | { op: 'put'; key: string; value: unknown };

/**
 * A connector's own durable change that belongs to an item's final report
 * (a counter, a record of what was handed off): a `StateEffect`, or for
 * anything else a function that gets the service's state store inside the
 * report's transaction (a transaction of its own: more round trips).
 */
export type ItemEffect = StateEffect | ((state: ConnectorPorts['state']) => Promise<void>);

/** Applies an effect through a state store (the function form, or the data form one call at a time). */
export async function applyEffect(effect: ItemEffect, state: ConnectorPorts['state']): Promise<void> {
  if (typeof effect === 'function') return effect(state);
  if (effect.op === 'increment') await state.increment(effect.key, effect.by ?? 1);
  else await state.put(effect.key, effect.value);
}

/** What `runItem` may use: the connector's ports, the item's reporter and its signal. */
export interface TaskItemContext extends ConnectorPorts {
  /**
   * Reports this item's state (the tid is filled in). With `effect` (final
   * outcomes only: `done`, `failed`), the effect runs in the same transaction
   * as the report, and only when the item was not final yet: a re-delivered
   * or retried item's effect is applied exactly once, even across a crash.
   * Resolves false when the report was refused (the item is final already,
   * paused or aborted meanwhile, or belongs to an older run).
   */
  report(report: Omit<ItemReport, 'item'>, effect?: ItemEffect): Promise<boolean>;
  /** Aborts with an `ItemInterrupted` reason on pause, abort or shutdown. */
  signal: AbortSignal;
}

/** The items of one task as `cstats` knows them, for the action hooks. */
export interface TaskJobs {
  sid: string;
  tid: string;
  /** jobId -> the last report. */
  jobs: ReadonlyMap<string, ItemReport>;
}

/**
 * The `tasks` facet: actions on a task's input items. The tasks area owns the
 * task rows, the status table and the queue; the connector only does the work
 * per item and says how it went.
 *
 * - `start` runs `runItem` for each input item in a worker (one job per item).
 *   `runItem` must be idempotent per item: after a crash, a resume or a
 *   repeated start it is called again for the same item, so ids it creates
 *   derive from `tid` and the item id. It resolves once the connector's part
 *   is over: finished (`done` / `failed` reported) or handed off for good (a
 *   print job created and reported `running`; later states come through the
 *   reporter from wherever the job runs).
 * - `pause` / `abort` abort the signal of items still in `runItem`
 *   (`ItemInterrupted`): stop soon, report `paused` / `aborted` when useful,
 *   then resolve or reject with `signal.reason`. `resume` runs `runItem`
 *   again for the items not `done`.
 * - Work handed off outlives `runItem`; the hooks act on it by job id.
 *
 * A connector offers only the actions it can keep: without `pause` in
 * `actions` the API answers 404 for it, as the spec says.
 */
export interface TasksFacet {
  /** The actions offered; always includes `start`. */
  readonly actions: readonly TaskAction[];
  runItem(item: TaskItem, ctx: TaskItemContext): Promise<void>;
  /** Pauses handed-off work (e.g. holds print jobs). */
  pause?(task: TaskJobs, ports: ConnectorPorts): Promise<void>;
  /** Resumes handed-off work. */
  resume?(task: TaskJobs, ports: ConnectorPorts): Promise<void>;
  /** Cancels handed-off work. */
  abort?(task: TaskJobs, ports: ConnectorPorts): Promise<void>;
}
