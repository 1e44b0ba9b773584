import type { Readable } from 'node:stream';
import type { Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import type { ListFormat, ListItem, Metadata, ParsedListItem } from '../../formats/index.js';
import * as lists from '../lists/store/list-store.js';
import type { ItemRow, ListRow, Placement } from '../lists/store/list-store.js';
import { checkHref, docRef } from '../lists/store/doc-href.js';
import { checkedItems } from '../lists/store/bulk/checked-items.js';
import { FEW_ITEMS, insertItemsFrom } from '../lists/store/bulk/insert-items.js';
import { parseForImport } from '../lists/store/bulk/parse-import.js';
import { listTooLarge } from '../../formats/format-errors.js';
import { mergeMetadata } from '../lists/store/merge-metadata.js';
import type { Logger } from '../../logging/logger.js';
import { safeFetch } from '../../net/safe-fetch.js';
import type { Tx } from '../../storage/driver/database.js';
import type { RepositoryService } from '../repository/repository-service.js';
import { checkMerged, isActive, taskActive, taskNotFound, type NewTaskInput, type TaskService } from './task-service.js';
import * as store from './store/task-store.js';
import type { TaskRow } from './store/task-store.js';
import type { TaskListKind } from './present.js';

/**
 * A task's input and output lists (DESIGN.md section 6): the list rows and
 * items through the shared list store, the task's rights and its "active"
 * rule on top. The input list cannot change while the task is processing
 * (409); the output list is written by connectors and read-only here.
 */

/** The input list of the create body (validated by the route's schema). */
export interface InputListBody {
  metadata: Metadata;
  embedded: { listItems: readonly ListItem[] };
}

/** Generated name of a task created from a CSV or RList body without a list name. */
const generatedName = () => `task ${new Date().toISOString()}`;

async function* iterate<T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
}

/** 409: the input list holds `tasks.maxItems` items already. */
export const listFull = (tid: string, maxItems: number) =>
  new AppError('LIST_FULL', `the input list of task ${tid} holds ${maxItems} items, the most a task may have`, { tid, maxItems });

/** A list a task search embeds: the list row and its first items (`items.length < list.item_count`: cut). */
export interface EmbeddedList {
  list: ListRow;
  items?: readonly ItemRow[];
}

export const itemNotFound = (tid: string, kind: TaskListKind, id: string) =>
  new AppError('ITEM_NOT_FOUND', `no item ${id} in the ${kind} list of task ${tid}`, { tid, id });

export interface ContentFetch {
  allowPrivate: boolean;
  timeoutMs: number;
}

export class TaskLists {
  constructor(
    private readonly tasks: TaskService,
    private readonly repository: RepositoryService,
    private readonly fetch: ContentFetch,
    private readonly log: Logger,
    /** Items one task's input list may hold, however they come (`tasks.maxItems`, default `lists.maxItems`). */
    private readonly maxItems: number,
  ) {}

  private get db() {
    return this.tasks.db;
  }

  /** A task from the create body (JSON) with its input list; the items' hrefs are checked, all in the task's transaction. */
  /** `tid`: the new task's id (the runtime's own work fixes it up front, to be idempotent). */
  async create(p: Principal, sid: string, input: NewTaskInput & { lists?: { input?: InputListBody } }, owner: string | null, tid?: string): Promise<TaskRow> {
    const list = input.lists?.input;
    const given = list?.embedded.listItems ?? [];
    if (given.length > this.maxItems) throw listTooLarge(this.maxItems);
    const items = given.map((i, index): ParsedListItem => ({ href: i.href, metadata: i.metadata, at: { index } }));
    const { task } = await this.tasks.create(p, sid, input, owner, (tx, t) =>
      this.createFor(tx, t, { metadata: list?.metadata ?? {} }, checkedItems(iterate(items)), undefined, items.length <= FEW_ITEMS), tid);
    return task;
  }

  /**
   * A task from a CSV or RList body (a generated name unless `task` names
   * it; the list's name and metadata go to its input list): the body is parsed as it streams in and
   * its items inserted in the task's transaction, so a bad row leaves
   * nothing behind.
   */
  async createFromList(
    p: Principal, sid: string, format: ListFormat, body: Readable, owner: string | null,
    task: { tid?: string; name?: string; metadata?: Record<string, unknown> } = {},
  ): Promise<TaskRow> {
    const parsed = parseForImport(format, body, { maxItems: this.maxItems });
    const { task: created } = await this.tasks.create(p, sid, { name: task.name ?? generatedName(), metadata: task.metadata ?? {} }, owner, (tx, t) =>
      this.createFor(tx, t, { metadata: {} }, checkedItems(parsed.items), () => parsed.header()), task.tid);
    return created;
  }

  /**
   * Creates the task's two lists in its creation transaction and fills the
   * input list from `items`. `header` gives the list's name and metadata once
   * the items are read (a CSV or RList body carries them anywhere in it).
   */
  private async createFor(
    tx: Tx, task: TaskRow, input: { metadata: Record<string, unknown> }, items: AsyncIterable<ListItem>,
    header?: () => { name?: string; metadata: Record<string, unknown> },
    few = false,
  ): Promise<ListRow> {
    const base = { tid: task.tid, creator: task.creator, owner: task.owner };
    if (few && !header) {
      // the common case in one statement: both lists, the items (checked as they are read) and the counter
      const checked: ListItem[] = [];
      for await (const item of items) checked.push(item);
      return lists.createTaskLists(tx, base, input.metadata, checked);
    }
    const list = await lists.createList(tx, { ...base, kind: 'input', metadata: input.metadata });
    await lists.createList(tx, { ...base, kind: 'output' });
    await insertItemsFrom(tx, list.lid, items, { newList: true, few });
    if (!header) return list;
    const h = header();
    return (await lists.replaceList(tx, list.lid, { name: h.name ?? null, metadata: h.metadata }))!;
  }

  private async listOf(sql: Parameters<typeof lists.getTaskList>[0], task: TaskRow, kind: TaskListKind, lock = false): Promise<ListRow> {
    const list = await lists.getTaskList(sql, task.tid, kind, { lock });
    if (!list) throw new AppError('LIST_NOT_FOUND', `task ${task.tid} has no ${kind} list`, { tid: task.tid });
    return list;
  }

  /** Every item of a list in index order (embeds; a list holds at most what its imports allowed). */
  async items(list: ListRow): Promise<ItemRow[]> {
    const out: ItemRow[] = [];
    for await (const row of lists.exportItems(this.db, list.lid)) out.push(row);
    return out;
  }

  async get(p: Principal, sid: string, tid: string, kind: TaskListKind): Promise<{ task: TaskRow; list: ListRow }> {
    const task = await this.tasks.get(p, sid, tid);
    return { task, list: await this.listOf(this.db, task, kind) };
  }

  /** The lists a task body embeds, read only when asked for. */
  async embedFor(task: TaskRow, want: { input: boolean; inputItems: boolean; output: boolean }) {
    const input = want.input || want.inputItems ? await lists.getTaskList(this.db, task.tid, 'input') : undefined;
    const output = want.output ? await lists.getTaskList(this.db, task.tid, 'output') : undefined;
    return {
      input: input ? { list: input, items: want.inputItems ? await this.items(input) : undefined } : undefined,
      output: output ? { list: output, items: await this.items(output) } : undefined,
    };
  }

  /**
   * The lists a search embeds for a group of tasks, by tid: at most
   * `maxItems` items of each (the first, in index order), read in one
   * statement per kind for the whole group.
   */
  async embedsForSearch(tasks: readonly TaskRow[], want: { input: boolean; inputItems: boolean; output: boolean }, maxItems: number) {
    const tids = tasks.map((t) => t.tid);
    const inputs = want.input || want.inputItems ? await lists.getTaskLists(this.db, tids, 'input') : new Map<string, ListRow>();
    const outputs = want.output ? await lists.getTaskLists(this.db, tids, 'output') : new Map<string, ListRow>();
    const withItems = [...(want.inputItems ? inputs.values() : []), ...outputs.values()].filter((l) => l.item_count > 0).map((l) => l.lid);
    const items = maxItems > 0 && withItems.length > 0 ? await lists.firstItemsOf(this.db, withItems, maxItems) : new Map<string, ItemRow[]>();
    const embedded = (list: ListRow | undefined, withList: boolean): EmbeddedList | undefined =>
      list && { list, items: withList ? items.get(list.lid) ?? [] : undefined };
    return new Map(tids.map((tid) => [tid, { input: embedded(inputs.get(tid), want.inputItems), output: embedded(outputs.get(tid), true) }]));
  }

  /**
   * Runs `change` on the input list in one transaction holding the task's
   * row lock, so it cannot interleave with a start: 409 while processing.
   */
  private async changeInput<T>(p: Principal, sid: string, tid: string, what: string, change: (tx: Tx, task: TaskRow, list: ListRow) => Promise<T>): Promise<T> {
    await this.tasks.get(p, sid, tid, 'write');
    return this.db.transaction(async (tx) => {
      const task = await store.getTask(tx, tid, { lock: true });
      if (!task) throw taskNotFound(tid, sid);
      if (isActive(task)) throw taskActive(task, what);
      const result = await change(tx, task, await this.listOf(tx, task, 'input'));
      await store.touchTask(tx, tid);
      return result;
    });
  }

  /** PUT: the list's metadata replaced; items unaffected. */
  replaceMetadata(p: Principal, sid: string, tid: string, metadata: Record<string, unknown>): Promise<ListRow> {
    return this.changeInput(p, sid, tid, 'cannot change the input list', async (tx, _task, list) => (await lists.replaceList(tx, list.lid, { metadata }))!);
  }

  /** PATCH: metadata merged (none removed), and the given items moved to the given indices. */
  patch(p: Principal, sid: string, tid: string, change: { metadata?: Record<string, unknown>; placements?: Placement[] }): Promise<ListRow> {
    return this.changeInput(p, sid, tid, 'cannot change the input list', async (tx, _task, list) => {
      if (change.placements) await lists.reorderItems(tx, list.lid, change.placements);
      if (!change.metadata) return (await lists.getList(tx, list.lid))!;
      checkMerged(mergeMetadata(list.metadata, change.metadata), 'metadata');
      return (await lists.patchList(tx, list.lid, { metadata: change.metadata }))!;
    });
  }

  /** Appends an item; 409 `LIST_FULL` when the list holds `maxItems` (read under the task's row lock, which every input change takes). */
  append(p: Principal, sid: string, tid: string, item: ListItem): Promise<ItemRow> {
    checkHref(item.href);
    return this.changeInput(p, sid, tid, 'cannot add to the input list', async (tx, _task, list) => {
      if (list.item_count >= this.maxItems) throw listFull(tid, this.maxItems);
      return (await lists.appendItem(tx, list.lid, item))!;
    });
  }

  async item(p: Principal, sid: string, tid: string, kind: TaskListKind, id: string): Promise<{ task: TaskRow; item: ItemRow }> {
    const { task, list } = await this.get(p, sid, tid, kind);
    const item = await lists.getItem(this.db, list.lid, id);
    if (!item) throw itemNotFound(tid, kind, id);
    return { task, item };
  }

  /** PUT (`replace`: href and metadata) or PATCH (`merge`: href when given, metadata merged). */
  updateItem(p: Principal, sid: string, tid: string, id: string, change: { href?: string; metadata?: Record<string, unknown> }, mode: 'replace' | 'merge'): Promise<ItemRow> {
    if (change.href !== undefined) checkHref(change.href);
    return this.changeInput(p, sid, tid, 'cannot change the input list', async (tx, _task, list) => {
      if (mode === 'replace') {
        const row = await lists.replaceItem(tx, list.lid, id, { href: change.href!, metadata: change.metadata ?? {} });
        if (!row) throw itemNotFound(tid, 'input', id);
        return row;
      }
      const current = await lists.getItem(tx, list.lid, id, { lock: true });
      if (!current) throw itemNotFound(tid, 'input', id);
      if (change.metadata) checkMerged(mergeMetadata(current.metadata, change.metadata), 'metadata');
      return (await lists.patchItem(tx, list.lid, id, change))!;
    });
  }

  /** Deletes an item: its id is never used again, the others keep theirs, indices close up. */
  deleteItem(p: Principal, sid: string, tid: string, id: string): Promise<void> {
    return this.changeInput(p, sid, tid, 'cannot change the input list', async (tx, _task, list) => {
      if (!(await lists.getItem(tx, list.lid, id))) throw itemNotFound(tid, 'input', id);
      await lists.deleteItem(tx, list.lid, id);
    });
  }

  /**
   * The content an input item refers to, streamed: a repository document
   * through the repository service (its rights, its backend), an http(s) URL
   * with the `import` command's guards (no private addresses unless allowed).
   */
  async openContent(p: Principal, tid: string, id: string): Promise<{ stream: Readable; length?: number }> {
    const task = await this.tasks.get(p, undefined, tid);
    const list = await this.listOf(this.db, task, 'input');
    const item = await lists.getItem(this.db, list.lid, id);
    if (!item) throw itemNotFound(tid, 'input', id);
    const doc = docRef(item.href);
    if (doc) {
      const { entry, stream } = await this.repository.openContent(p, doc.sid, doc.uuid);
      return { stream, length: entry.size ?? undefined };
    }
    let url: URL;
    try {
      url = new URL(item.href);
    } catch {
      throw new AppError('INVALID_HREF', `item ${id} refers to "${item.href.slice(0, 200)}", which is not a URL`, { tid, id });
    }
    const fetched = await safeFetch(url, {
      allowPrivate: this.fetch.allowPrivate, timeoutMs: this.fetch.timeoutMs,
      onError: (err, where) => this.log.warn({ err, tid, id, url: where }, 'task item content: fetching failed'),
    });
    return { stream: fetched.body, length: fetched.contentLength };
  }
}
