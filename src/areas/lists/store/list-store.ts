import { randomUUID } from 'node:crypto';
import { AppError } from '../../../errors/app-error.js';
import { assertValidText, DISPLAY_NAME_MAX } from '../../../errors/input-errors.js';
import { throwSqlError } from '../../../errors/sql-errors.js';
import { fieldMap } from '../../../query/fields.js';
import type { ListQuery } from '../../../query/tree.js';
import { toSql } from '../../../query/to-sql.js';
import type { Sql, Tx } from '../../../storage/driver/database.js';
import { docRef, type DocRef } from './doc-href.js';
import { itemId } from './item-id.js';
import type { ListItem, Metadata } from '../../../formats/index.js';
import { mergeMetadata } from './merge-metadata.js';

/**
 * The one store of the `lists` and `list_items` tables (migrations 001, 008):
 * per-user lists and the input/output lists of tasks share it. Every
 * statement is parameterized; property paths reach SQL only through the
 * field maps. Positions are dense (0..n-1) and the list row's `item_count` is
 * the next free one: every change of positions first takes the list row's
 * lock (an `UPDATE` of the counter or `FOR UPDATE`), so appends, deletes and
 * reorders of one list run one after the other. Item ids are UUIDv7
 * (`item-id.ts`), never reused. A bulk import (`bulk/`: a parser's items,
 * streamed in chunks, or COPY payloads encoded in the CSV import thread)
 * writes through the statements at the end of this file.
 */

export type ListKind = 'user' | 'input' | 'output';

export interface ListRow {
  lid: string;
  kind: ListKind;
  tid: string | null;
  name: string | null;
  metadata: Metadata;
  creator: string | null;
  owner: string | null;
  created: Date;
  modified: Date;
  item_count: number;
}

export interface ItemRow {
  id: string;
  lid: string;
  position: number;
  href: string;
  doc_sid: string | null;
  doc_uuid: string | null;
  metadata: Metadata;
  created: Date;
  modified: Date;
}

export interface NewList {
  lid?: string;
  kind: ListKind;
  tid?: string | null;
  name?: string | null;
  metadata?: Metadata;
  creator?: string | null;
  owner?: string | null;
}

/** The list's own fields a replace or patch sets; `name` undefined keeps the name. */
export interface ListChange {
  name?: string | null;
  metadata?: Metadata;
}

/** API fields of a list listing; other names are paths into metadata. */
export const LIST_FIELDS = fieldMap({
  lid: { sql: 'lid', type: 'text' },
  name: { sql: 'name', type: 'text' },
  creator: { sql: 'creator', type: 'text' },
  owner: { sql: 'owner', type: 'text' },
  created: { sql: 'created', type: 'date' },
  modified: { sql: 'modified', type: 'date' },
  count: { sql: 'item_count', type: 'number' },
  metadata: { sql: 'metadata', type: 'json' },
}, 'metadata');

/** API fields of an item listing; other names are paths into metadata. */
export const ITEM_FIELDS = fieldMap({
  id: { sql: 'id', type: 'text' },
  index: { sql: 'position', type: 'number' },
  href: { sql: 'href', type: 'text' },
  created: { sql: 'created', type: 'date' },
  modified: { sql: 'modified', type: 'date' },
  metadata: { sql: 'metadata', type: 'json' },
}, 'metadata');

const LIST_COLS = 'lid, kind, tid, name, metadata, creator, owner, created, modified, item_count';
const ITEM_COLS = 'id, lid, position, href, doc_sid, doc_uuid, metadata, created, modified';

// ---------------------------------------------------------------- lists

/**
 * The name rule of every list, checked where a name is written (a JSON body,
 * a CSV `list.name`, an RList or JSON import alike): at most 1,024
 * characters, as task names, and the shared text rule (errors/input-errors.ts).
 * An empty name is allowed (formats round-trip it).
 */
function checkName(name: string | null | undefined): void {
  if (name) assertValidText(name, 'the list name', DISPLAY_NAME_MAX);
}

export async function createList(sql: Sql, list: NewList): Promise<ListRow> {
  checkName(list.name);
  const { rows } = await sql.query<ListRow>(
    `INSERT INTO lists (lid, kind, tid, name, metadata, creator, owner) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${LIST_COLS}`,
    [list.lid ?? randomUUID(), list.kind, list.tid ?? null, list.name ?? null, JSON.stringify(list.metadata ?? {}), list.creator ?? null, list.owner ?? null],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** A list by id; `lock` takes its row lock (`FOR UPDATE`) for the rest of the transaction. */
export async function getList(sql: Sql, lid: string, opts: { lock?: boolean } = {}): Promise<ListRow | undefined> {
  const { rows } = await sql.query<ListRow>(`SELECT ${LIST_COLS} FROM lists WHERE lid = $1${opts.lock ? ' FOR UPDATE' : ''}`, [lid]);
  return rows[0];
}

/** The input or output list of a task. */
export async function getTaskList(sql: Sql, tid: string, kind: 'input' | 'output', opts: { lock?: boolean } = {}): Promise<ListRow | undefined> {
  const { rows } = await sql.query<ListRow>(`SELECT ${LIST_COLS} FROM lists WHERE tid = $1 AND kind = $2${opts.lock ? ' FOR UPDATE' : ''}`, [tid, kind]);
  return rows[0];
}

/** The `kind` lists of several tasks, by tid (a task search's embeds: one statement per group of tasks). */
export async function getTaskLists(sql: Sql, tids: readonly string[], kind: 'input' | 'output'): Promise<Map<string, ListRow>> {
  if (tids.length === 0) return new Map();
  const { rows } = await sql.query<ListRow>(`SELECT ${LIST_COLS} FROM lists WHERE tid = ANY($1::uuid[]) AND kind = $2`, [tids, kind]);
  return new Map(rows.map((r) => [r.tid!, r]));
}

/** Per-user lists, optionally only those a set of identities created or owns. */
export async function listUserLists(sql: Sql, scope: { ownedBy?: readonly string[] }, q: ListQuery): Promise<ListRow[]> {
  const params: unknown[] = [];
  const where = [`kind = 'user'`];
  if (scope.ownedBy) {
    params.push(scope.ownedBy);
    where.push(`(creator = ANY($1::text[]) OR owner = ANY($1::text[]))`);
  }
  const frag = toSql(q, LIST_FIELDS, params, 'created ASC, lid ASC');
  params.push(q.limit, q.offset);
  const { rows } = await sql.query<ListRow>(
    `SELECT ${LIST_COLS} FROM lists WHERE ${[...where, ...frag.where].join(' AND ')}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

/** Replaces name (when given) and metadata; undefined when the list is gone. */
export async function replaceList(sql: Sql, lid: string, change: ListChange): Promise<ListRow | undefined> {
  checkName(change.name);
  const { rows } = await sql.query<ListRow>(
    `UPDATE lists SET metadata = $2, name = CASE WHEN $3::boolean THEN $4 ELSE name END, modified = now()
     WHERE lid = $1 RETURNING ${LIST_COLS}`,
    [lid, JSON.stringify(change.metadata ?? {}), change.name !== undefined, change.name ?? null],
  ).catch(throwSqlError);
  return rows[0];
}

/** Merges metadata into the list's (nested objects key by key, nothing removed); sets the name when given. */
export async function patchList(tx: Tx, lid: string, change: ListChange): Promise<ListRow | undefined> {
  const current = await getList(tx, lid, { lock: true });
  if (!current) return undefined;
  return replaceList(tx, lid, { name: change.name, metadata: mergeMetadata(current.metadata, change.metadata ?? {}) });
}

/** Deletes a list and (by cascade) its items; the documents they name are untouched. */
export async function deleteList(sql: Sql, lid: string): Promise<boolean> {
  const { rowCount } = await sql.query('DELETE FROM lists WHERE lid = $1', [lid]);
  return rowCount > 0;
}

// ---------------------------------------------------------------- items

/**
 * Column arrays of items, for one INSERT of many rows (one parameter per
 * column, whatever the row count). Metadata goes as one JSON array: pg would
 * otherwise escape every quote of every object into an array literal, the
 * costliest step of a large import.
 */
/** An item on its way into the store; `doc` is the document its href names when the caller already parsed it (null: none). */
export type StoreItem = ListItem & { doc?: DocRef | null };

function columns(items: readonly StoreItem[]): [string[], string[], (string | null)[], (string | null)[], string] {
  const ids: string[] = new Array<string>(items.length);
  const hrefs: string[] = new Array<string>(items.length);
  const sids: (string | null)[] = new Array<string | null>(items.length);
  const uuids: (string | null)[] = new Array<string | null>(items.length);
  const metas: Metadata[] = new Array<Metadata>(items.length);
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const ref = item.doc !== undefined ? item.doc : docRef(item.href);
    ids[i] = itemId();
    hrefs[i] = item.href;
    sids[i] = ref?.sid ?? null;
    uuids[i] = ref?.uuid ?? null;
    metas[i] = item.metadata;
  }
  return [ids, hrefs, sids, uuids, JSON.stringify(metas)];
}

// ROWS FROM zips the columns by position; WITH ORDINALITY numbers the rows from 1
const UNNEST = `ROWS FROM (unnest($2::uuid[]), unnest($3::text[]), unnest($4::text[]), unnest($5::uuid[]), jsonb_array_elements($6::jsonb)) WITH ORDINALITY AS x(id, href, doc_sid, doc_uuid, metadata, ord)`;

/**
 * Appends items at the end, in one statement: the list's counter is bumped
 * under its row lock and the items take the positions it reserved. Empty
 * when the list does not exist.
 */
export async function appendItems(sql: Sql, lid: string, items: readonly ListItem[]): Promise<ItemRow[]> {
  if (items.length === 0) return [];
  const { rows } = await sql.query<ItemRow>(
    `WITH l AS (UPDATE lists SET item_count = item_count + $7, modified = now() WHERE lid = $1 RETURNING item_count - $7 AS base)
     INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid, metadata)
     SELECT x.id, $1, l.base + x.ord - 1, x.href, x.doc_sid, x.doc_uuid, x.metadata FROM l, ${UNNEST}
     RETURNING ${ITEM_COLS}`,
    [lid, ...columns(items), items.length],
  ).catch(throwSqlError);
  return rows.sort((a, b) => a.position - b.position);
}

export async function appendItem(sql: Sql, lid: string, item: ListItem): Promise<ItemRow | undefined> {
  return (await appendItems(sql, lid, [item]))[0];
}

/** An item by its id within its list (never by index). */
export async function getItem(sql: Sql, lid: string, id: string, opts: { lock?: boolean } = {}): Promise<ItemRow | undefined> {
  const { rows } = await sql.query<ItemRow>(`SELECT ${ITEM_COLS} FROM list_items WHERE lid = $1 AND id = $2${opts.lock ? ' FOR UPDATE' : ''}`, [lid, id]);
  return rows[0];
}

/** Replaces an item's href and metadata; undefined when there is no such item. */
export async function replaceItem(sql: Sql, lid: string, id: string, item: ListItem): Promise<ItemRow | undefined> {
  const ref = docRef(item.href);
  const { rows } = await sql.query<ItemRow>(
    `UPDATE list_items SET href = $3, doc_sid = $4, doc_uuid = $5, metadata = $6, modified = now()
     WHERE lid = $1 AND id = $2 RETURNING ${ITEM_COLS}`,
    [lid, id, item.href, ref?.sid ?? null, ref?.uuid ?? null, JSON.stringify(item.metadata)],
  ).catch(throwSqlError);
  return rows[0];
}

/** Merges metadata into the item's (nothing removed) and sets the href when given. */
export async function patchItem(tx: Tx, lid: string, id: string, change: { href?: string; metadata?: Metadata }): Promise<ItemRow | undefined> {
  const current = await getItem(tx, lid, id, { lock: true });
  if (!current) return undefined;
  return replaceItem(tx, lid, id, { href: change.href ?? current.href, metadata: mergeMetadata(current.metadata, change.metadata ?? {}) });
}

/**
 * Deletes an item; the items after it move up by one in the same statement,
 * so positions stay 0..n-1 and every other item keeps its id. The list row
 * is locked first, so the shift sees every committed append.
 */
export async function deleteItem(tx: Tx, lid: string, id: string): Promise<boolean> {
  if (!(await getList(tx, lid, { lock: true }))) return false;
  const { rows } = await tx.query<{ position: number }>(
    `WITH gone AS (DELETE FROM list_items WHERE lid = $1 AND id = $2 RETURNING position),
     shifted AS (UPDATE list_items SET position = position - 1 WHERE lid = $1 AND position > (SELECT position FROM gone)),
     counted AS (UPDATE lists SET item_count = item_count - 1, modified = now() WHERE lid = $1 AND EXISTS (SELECT 1 FROM gone))
     SELECT position FROM gone`,
    [lid, id],
  );
  return rows.length > 0;
}

/** Where one item goes in a reorder. */
export interface Placement {
  id: string;
  index: number;
}

/**
 * Moves the given items to the given indices; the others fill the remaining
 * indices in their current order. Ids must be items of the list, each once;
 * indices distinct and below the item count (else 400 `INVALID_REORDER`).
 * Returns false when the list does not exist.
 */
export async function reorderItems(tx: Tx, lid: string, placements: readonly Placement[]): Promise<boolean> {
  const list = await getList(tx, lid, { lock: true });
  if (!list) return false;
  if (placements.length === 0) return true;
  const ids = new Set<string>();
  const indices = new Set<number>();
  for (const p of placements) {
    if (ids.has(p.id)) throw new AppError('INVALID_REORDER', `item ${p.id} is placed twice`, { id: p.id });
    if (!Number.isInteger(p.index) || p.index < 0 || p.index >= list.item_count) {
      throw new AppError('INVALID_REORDER', `index ${p.index} is not between 0 and ${list.item_count - 1}`, { id: p.id, index: p.index });
    }
    if (indices.has(p.index)) throw new AppError('INVALID_REORDER', `two items are placed at index ${p.index}`, { index: p.index });
    ids.add(p.id);
    indices.add(p.index);
  }
  const idArr = placements.map((p) => p.id);
  const { rows } = await tx.query<{ id: string }>('SELECT id FROM list_items WHERE lid = $1 AND id = ANY($2::uuid[])', [lid, idArr]);
  if (rows.length !== ids.size) {
    const found = new Set(rows.map((r) => r.id));
    const missing = idArr.find((id) => !found.has(id));
    throw new AppError('INVALID_REORDER', `item ${missing} is not in this list`, { id: missing });
  }
  await tx.query(
    `WITH moves AS (SELECT * FROM unnest($2::uuid[], $3::int[]) AS m(id, idx)),
     rest AS (SELECT id, row_number() OVER (ORDER BY position) AS rn FROM list_items WHERE lid = $1 AND id NOT IN (SELECT id FROM moves)),
     free AS (SELECT g AS idx, row_number() OVER (ORDER BY g) AS rn FROM generate_series(0, $4::int - 1) AS g WHERE g NOT IN (SELECT idx FROM moves)),
     target AS (SELECT id, idx FROM moves UNION ALL SELECT rest.id, free.idx FROM rest JOIN free USING (rn))
     UPDATE list_items li SET position = target.idx, modified = now() FROM target
     WHERE li.lid = $1 AND li.id = target.id AND li.position <> target.idx`,
    [lid, idArr, placements.map((p) => p.index), list.item_count],
  );
  await tx.query('UPDATE lists SET modified = now() WHERE lid = $1', [lid]);
  return true;
}

export async function countItems(sql: Sql, lid: string): Promise<number> {
  const { rows } = await sql.query<{ n: number }>('SELECT count(*)::int AS n FROM list_items WHERE lid = $1', [lid]);
  return rows[0]!.n;
}

/** One page of a list's items (offset, limit, sort, filters; by index by default). */
export async function pageItems(sql: Sql, lid: string, q: ListQuery): Promise<ItemRow[]> {
  const params: unknown[] = [lid];
  const frag = toSql(q, ITEM_FIELDS, params, 'position ASC');
  params.push(q.limit, q.offset);
  const { rows } = await sql.query<ItemRow>(
    `SELECT ${ITEM_COLS} FROM list_items WHERE ${['lid = $1', ...frag.where].join(' AND ')}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

/** The first `limit` items of each of several lists, by index, in one statement (list embeds). */
export async function firstItemsOf(sql: Sql, lids: readonly string[], limit: number): Promise<Map<string, ItemRow[]>> {
  const out = new Map<string, ItemRow[]>(lids.map((lid) => [lid, []]));
  if (lids.length === 0) return out;
  const { rows } = await sql.query<ItemRow>(
    `SELECT ${ITEM_COLS} FROM list_items WHERE lid = ANY($1::uuid[]) AND position < $2 ORDER BY lid, position`, [lids, limit]);
  for (const row of rows) out.get(row.lid)?.push(row);
  return out;
}

/**
 * Streams a list's items in index order, a keyset page at a time (each page
 * its own statement, so no transaction or cursor stays open while a slow
 * client reads). Items deleted or moved meanwhile may be skipped or seen
 * twice at the page edges; callers that need one consistent picture read
 * inside a REPEATABLE READ transaction.
 */
export async function* exportItems(sql: Sql, lid: string, pageSize = 1000): AsyncGenerator<ItemRow> {
  let after = -1;
  for (;;) {
    const { rows } = await sql.query<ItemRow>(
      `SELECT ${ITEM_COLS} FROM list_items WHERE lid = $1 AND position > $2 ORDER BY position LIMIT $3`, [lid, after, pageSize]);
    for (const row of rows) yield row;
    if (rows.length < pageSize) return;
    after = rows[rows.length - 1]!.position;
  }
}

// ---------------------------------------------------------------- bulk import (bulk/insert-items.ts)

/**
 * Takes the list's row lock for the rest of the transaction, ahead of a bulk
 * import: its lid as PostgreSQL spells it (the binary COPY writes its bytes)
 * and the next free position. Undefined when the list does not exist.
 */
export async function lockForImport(tx: Tx, lid: string): Promise<{ lid: string; base: number } | undefined> {
  const { rows } = await tx.query<{ lid: string; item_count: number }>('SELECT lid, item_count FROM lists WHERE lid = $1 FOR UPDATE', [lid]);
  return rows[0] && { lid: rows[0].lid, base: rows[0].item_count };
}

// the binary format: no text to escape on our side, no uuid or integer text to parse on the server's
const COPY_ITEMS = 'COPY list_items (id, lid, position, href, doc_sid, doc_uuid, metadata) FROM STDIN (FORMAT binary)';

/**
 * Writes items given as binary COPY data (copy-rows.ts: the columns of
 * `COPY_ITEMS`, in its order); undefined where the driver has no COPY
 * (PGlite), whose imports go through `insertItemRows`.
 */
export function itemCopier(tx: Tx): ((data: Buffer) => Promise<number>) | undefined {
  const copy = tx.copyFrom?.bind(tx);
  return copy && ((data) => copy(COPY_ITEMS, data));
}

/** Inserts items at positions `base`, `base + 1`, ... in one multi-row statement. */
export async function insertItemRows(tx: Tx, lid: string, base: number, items: readonly StoreItem[]): Promise<void> {
  const [ids, hrefs, sids, uuids, metas] = columns(items);
  await tx.query(
    `INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid, metadata)
     SELECT x.id, $1, $7 + x.ord - 1, x.href, x.doc_sid, x.doc_uuid, x.metadata FROM ${UNNEST}`,
    [lid, ids, hrefs, sids, uuids, metas, base],
  );
}

/**
 * A new task's two lists in one statement: the input list with `items` at
 * positions 0, 1, ... and its counter, and the empty output list (a task
 * created with few items; its row exists in the caller's transaction).
 * Answers the input list.
 */
export async function createTaskLists(
  tx: Tx, task: { tid: string; creator: string | null; owner: string | null }, metadata: Metadata, items: readonly StoreItem[],
): Promise<ListRow> {
  const [ids, hrefs, sids, uuids, metas] = columns(items);
  const input = randomUUID();
  const { rows } = await tx.query<ListRow>(
    `WITH l AS (INSERT INTO lists (lid, kind, tid, name, metadata, creator, owner, item_count)
                VALUES ($1, 'input', $7, NULL, $8, $9, $10, $11), ($12, 'output', $7, NULL, '{}', $9, $10, 0) RETURNING ${LIST_COLS}),
          i AS (INSERT INTO list_items (id, lid, position, href, doc_sid, doc_uuid, metadata)
                SELECT x.id, $1, x.ord - 1, x.href, x.doc_sid, x.doc_uuid, x.metadata FROM ${UNNEST})
     SELECT ${LIST_COLS} FROM l WHERE lid = $1`,
    [input, ids, hrefs, sids, uuids, metas, task.tid, JSON.stringify(metadata), task.creator, task.owner, items.length, randomUUID()],
  ).catch(throwSqlError);
  return rows[0]!;
}

/** Sets the list's counter once a bulk import has written its items (the list row is locked). */
export async function setItemCount(tx: Tx, lid: string, count: number): Promise<void> {
  await tx.query('UPDATE lists SET item_count = $2, modified = now() WHERE lid = $1', [lid, count]);
}
