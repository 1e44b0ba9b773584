import type { Readable } from 'node:stream';
import type { Action } from '../../config/schema.js';
import type { Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import { AppError } from '../../errors/app-error.js';
import { type ListFormat, LIST_FORMATS, importFormat } from '../../formats/index.js';
import type { ListItem, Metadata } from '../../formats/index.js';
import * as store from './store/list-store.js';
import { checkedItems } from './store/bulk/checked-items.js';
import { checkHref } from './store/doc-href.js';
import { insertItemsFrom } from './store/bulk/insert-items.js';
import { parseForImport } from './store/bulk/parse-import.js';
import type { ItemRow, ListRow } from './store/list-store.js';
import { displayUrl, safeFetch } from '../../net/safe-fetch.js';
import type { ListQuery } from '../../query/tree.js';
import type { Database } from '../../storage/driver/database.js';
import type { Logger } from '../../logging/logger.js';

/** Where an imported list comes from: the request body, or a URL fetched with the import guards. */
export type ListSourceInput = { contentType: string | undefined; body: Readable } | { href: string };

export interface ListServiceOptions {
  db: Database;
  policy: Policy;
  log: Logger;
  maxItems: number;
  fetch: { timeoutMs: number; allowPrivate: boolean };
}

const BY_EXTENSION: ReadonlyMap<string, ListFormat['name']> = new Map([['.csv', 'csv'], ['.rli', 'rlist'], ['.json', 'json']]);

/**
 * The per-user lists (spec: Lists): rights, rules and the import/export
 * flow; never sees HTTP. Lists are the caller's own: another user's list is
 * 404 as if it did not exist (nothing about it is shown), unless a role gives
 * the `all` scope on `lists`. Item hrefs keep the task items' rule
 * (`checkHref`): a repository document path or an http(s) URL, on every way in. All SQL is in the list store (`store/list-store.ts`).
 */
export class ListService {
  constructor(private readonly o: ListServiceOptions) {}

  /** 403 without the area right; 404 for a list that is missing, not a user list, or not the caller's. */
  private async visible(p: Principal, lid: string, action: Action, sql: Parameters<typeof store.getList>[0] = this.o.db, lock = false): Promise<ListRow> {
    this.o.policy.require(p, 'lists', action);
    const list = await store.getList(sql, lid, { lock });
    if (!list || list.kind !== 'user' || !this.o.policy.may(p, 'lists', action, list)) {
      throw new AppError('LIST_NOT_FOUND', 'no such list', { lid });
    }
    return list;
  }

  /** The rights a caller has on a list, for `embedded.permissions`. */
  permissions(p: Principal, list: ListRow): { read: boolean; write: boolean; delete: boolean } {
    return {
      read: this.o.policy.may(p, 'lists', 'read', list),
      write: this.o.policy.may(p, 'lists', 'write', list),
      delete: this.o.policy.may(p, 'lists', 'delete', list),
    };
  }

  /** GET /lists: the caller's own lists (404 when there are none on this page). */
  async list(p: Principal, q: ListQuery): Promise<ListRow[]> {
    this.o.policy.require(p, 'lists', 'read');
    const rows = await store.listUserLists(this.o.db, { ownedBy: p.identities }, q);
    if (rows.length === 0) throw new AppError('NO_LISTS', 'no lists match');
    return rows;
  }

  /**
   * POST /lists: parses the body (or the fetched `href`) as it streams and
   * writes the list and its items in one transaction; a bad row or section,
   * or too many items, rolls everything back.
   */
  async create(p: Principal, input: ListSourceInput): Promise<ListRow> {
    this.o.policy.require(p, 'lists', 'write');
    const { format, body } = 'href' in input ? await this.fetch(input.href) : { format: importFormat(input.contentType), body: input.body };
    try {
      const parsed = parseForImport(format, body, { maxItems: this.o.maxItems });
      return await this.o.db.transaction(async (tx) => {
        const list = await store.createList(tx, { kind: 'user', creator: p.user });
        await insertItemsFrom(tx, list.lid, checkedItems(parsed.items), { newList: true });
        const header = parsed.header();
        return (await store.replaceList(tx, list.lid, { name: header.name ?? null, metadata: header.metadata }))!;
      });
    } finally {
      // a fetched body is ours: never leave it half-read (the request body is Koa's, which drains it)
      if ('href' in input) discard(body);
    }
  }

  /** The fetched list and its format: the response's type when it is one of the three, else the URL's extension. */
  private async fetch(href: string): Promise<{ format: ListFormat; body: Readable }> {
    let url: URL;
    try {
      url = new URL(href);
    } catch {
      throw new AppError('INVALID_QUERY', 'href must be an absolute http(s) URL', { parameter: 'href' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError('INVALID_QUERY', 'href must be an http(s) URL', { parameter: 'href' });
    const fetched = await safeFetch(url, {
      ...this.o.fetch,
      onError: (err, where) => this.o.log.warn({ err, url: where }, 'list import fetch failed'),
    });
    const type = fetched.contentType?.split(';')[0]?.trim().toLowerCase();
    let format = LIST_FORMATS.find((f) => f.mimeType === type);
    if (!format) {
      const ext = /\.[a-z]+$/i.exec(fetched.url.pathname)?.[0]?.toLowerCase();
      const name = ext === undefined ? undefined : BY_EXTENSION.get(ext);
      format = LIST_FORMATS.find((f) => f.name === name);
    }
    if (!format) {
      discard(fetched.body);
      throw new AppError('UNSUPPORTED_MEDIA_TYPE', `${displayUrl(fetched.url)} is not a list (${type ?? 'no type'}); lists are ${LIST_FORMATS.map((f) => f.mimeType).join(', ')}`);
    }
    return { format, body: fetched.body };
  }

  get(p: Principal, lid: string): Promise<ListRow> {
    return this.visible(p, lid, 'read');
  }

  async replace(p: Principal, lid: string, change: { name?: string | null; metadata: Metadata }): Promise<ListRow> {
    return this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'write', tx, true);
      return (await store.replaceList(tx, lid, { name: change.name ?? null, metadata: change.metadata }))!;
    });
  }

  async patch(p: Principal, lid: string, change: { name?: string | null; metadata?: Metadata }): Promise<ListRow> {
    return this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'write', tx, true);
      return (await store.patchList(tx, lid, change))!;
    });
  }

  async remove(p: Principal, lid: string): Promise<void> {
    await this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'delete', tx, true);
      await store.deleteList(tx, lid);
    });
  }

  /** A page of items (404 `NO_ITEMS` when the page is empty). */
  async items(p: Principal, lid: string, q: ListQuery): Promise<ItemRow[]> {
    await this.visible(p, lid, 'read');
    const rows = await store.pageItems(this.o.db, lid, q);
    if (rows.length === 0) throw new AppError('NO_ITEMS', 'the list has no items here', { lid });
    return rows;
  }

  /** The first items of lists the caller was shown (`GET /lists?embed=items`), by lid. */
  firstItems(lids: readonly string[], limit: number): Promise<Map<string, ItemRow[]>> {
    return store.firstItemsOf(this.o.db, lids, limit);
  }

  /** Every item in index order, streamed (for exports and `embed=items`). */
  allItems(lid: string): AsyncIterable<ItemRow> {
    return store.exportItems(this.o.db, lid);
  }

  async append(p: Principal, lid: string, item: ListItem): Promise<ItemRow> {
    checkHref(item.href);
    await this.visible(p, lid, 'write');
    const row = await store.appendItem(this.o.db, lid, item);
    if (!row) throw new AppError('LIST_NOT_FOUND', 'no such list', { lid });
    return row;
  }

  async item(p: Principal, lid: string, id: string): Promise<ItemRow> {
    await this.visible(p, lid, 'read');
    return found(await store.getItem(this.o.db, lid, id), id);
  }

  async replaceItem(p: Principal, lid: string, id: string, change: { href?: string; metadata: Metadata }): Promise<ItemRow> {
    if (change.href !== undefined) checkHref(change.href);
    return this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'write', tx);
      const current = found(await store.getItem(tx, lid, id, { lock: true }), id);
      return found(await store.replaceItem(tx, lid, id, { href: change.href ?? current.href, metadata: change.metadata }), id);
    });
  }

  async patchItem(p: Principal, lid: string, id: string, change: { href?: string; metadata?: Metadata }): Promise<ItemRow> {
    if (change.href !== undefined) checkHref(change.href);
    return this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'write', tx);
      return found(await store.patchItem(tx, lid, id, change), id);
    });
  }

  async removeItem(p: Principal, lid: string, id: string): Promise<void> {
    await this.o.db.transaction(async (tx) => {
      await this.visible(p, lid, 'write', tx);
      if (!(await store.deleteItem(tx, lid, id))) throw new AppError('ITEM_NOT_FOUND', 'no such item in this list', { id });
    });
  }
}

/** Drops a fetched body; undici's body emits an error when destroyed, which must have a listener. */
function discard(body: Readable): void {
  body.on('error', () => undefined);
  if (!body.destroyed) body.destroy();
}

function found(row: ItemRow | undefined, id: string): ItemRow {
  if (!row) throw new AppError('ITEM_NOT_FOUND', 'no such item in this list', { id });
  return row;
}
