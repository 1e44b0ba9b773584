import type { ItemRow, ListRow } from '../lists/store/list-store.js';
import type { TaskRow } from './store/task-store.js';
import type { TaskEmbed } from './schema.js';

export const taskHref = (t: Pick<TaskRow, 'sid' | 'tid'>) => `/v1/services/${encodeURIComponent(t.sid)}/tasks/${t.tid}`;

/**
 * The task's `cstats` (DESIGN.md section 6): `{ "<jobId>": { state, item,
 * href, updated, message } }`. Task reads select it from the per-item rows
 * (`store/cstats-column.ts`), already shaped; this is the one place a body
 * takes it from.
 */
export function presentCstats(t: TaskRow): Record<string, unknown> {
  return t.cstats;
}

export type TaskListKind = 'input' | 'output';

/** One item of a task's input or output list: `id` (UUID, kept for life), `index` (0..n-1), `href`, `metadata`. */
export function presentTaskItem(t: Pick<TaskRow, 'sid' | 'tid'>, kind: TaskListKind, item: ItemRow): Record<string, unknown> {
  const self = `${taskHref(t)}/${kind}/${item.id}`;
  const links: Record<string, { href: string }> = { self: { href: self } };
  if (kind === 'input') links.content = { href: `/v1/tasks/${t.tid}/input/${item.id}/content` };
  return { id: item.id, index: item.position, href: item.href, metadata: item.metadata, links };
}

/**
 * A task's list: its metadata, the item count and, when asked for, the items
 * in index order. `capped`: the items are the first ones only (a search's
 * embed); when that left some out, `truncated` says how many are shown, how
 * many there are, and where the whole list is.
 */
export function presentTaskList(t: Pick<TaskRow, 'sid' | 'tid'>, kind: TaskListKind, list: ListRow, items?: readonly ItemRow[], capped = false): Record<string, unknown> {
  const out: Record<string, unknown> = {
    metadata: list.metadata,
    count: list.item_count,
    created: list.created.toISOString(),
    modified: list.modified.toISOString(),
    links: { self: { href: `${taskHref(t)}/${kind}` }, task: { href: taskHref(t) } },
  };
  if (items) {
    if (capped && items.length < list.item_count) out.truncated = { shown: items.length, count: list.item_count, href: `${taskHref(t)}/${kind}?embed=items` };
    out.embedded = { listItems: items.map((i) => presentTaskItem(t, kind, i)) };
  }
  return out;
}

/** What a task body shows beyond its own fields. */
export interface TaskParts {
  embed: ReadonlySet<TaskEmbed>;
  /** Search results show `metadata` and `cstats` only when embedded; a single task always shows them. */
  full: boolean;
  input?: { list: ListRow; items?: readonly ItemRow[] };
  output?: { list: ListRow; items?: readonly ItemRow[] };
  /** The lists' items are their first ones only (a search: `tasks.searchEmbedItems`). */
  capped?: boolean;
  /** `embed=input` shows the input list's items too (a single task; searches keep `inputlist` for that). */
  inputWithItems?: boolean;
}

/** The task body of DESIGN.md section 6, with the requested `embedded` parts. */
export function presentTask(t: TaskRow, parts: TaskParts): Record<string, unknown> {
  const href = taskHref(t);
  const out: Record<string, unknown> = {
    tid: t.tid,
    sid: t.sid,
    href,
    name: t.name,
    type: t.type,
    status: t.status,
    // an extension (migration 026): kept with the task, so a poller need not read every item's cstats
    progress: t.progress,
    creator: t.creator,
    owner: t.owner,
    created: t.created.toISOString(),
    modified: t.modified.toISOString(),
  };
  if (parts.full || parts.embed.has('metadata')) out.metadata = t.metadata;
  if (parts.full || parts.embed.has('cstats')) out.cstats = presentCstats(t);
  out.links = {
    self: { href },
    input: { href: `${href}/input` },
    output: { href: `${href}/output` },
    action: { href: `${href}/action` },
  };
  const embedded: Record<string, unknown> = {};
  if (parts.input && parts.embed.has('input')) embedded.input = presentTaskList(t, 'input', parts.input.list, parts.inputWithItems ? parts.input.items : undefined, parts.capped);
  if (parts.input?.items && parts.embed.has('inputlist')) embedded.inputlist = presentTaskList(t, 'input', parts.input.list, parts.input.items, parts.capped);
  if (parts.output && parts.embed.has('output')) embedded.output = presentTaskList(t, 'output', parts.output.list, parts.output.items, parts.capped);
  if (Object.keys(embedded).length > 0) out.embedded = embedded;
  return out;
}
