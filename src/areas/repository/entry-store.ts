import { createHash, randomUUID } from 'node:crypto';
import type { ChangedContent, FoundEntry, SeenChild, SyncChild } from '../../connectors/facets/repository.js';
import type { Sql } from '../../storage/driver/database.js';
import { throwSqlError } from '../../errors/sql-errors.js';
import { fieldMap } from '../../query/fields.js';
import type { ListQuery } from '../../query/tree.js';
import { toSql } from '../../query/to-sql.js';
import type { ContentInfo, EntryRow, TaskRef } from './entry.js';

/** SQL for repository entries; every statement is parameterized. */

/** API fields of an entry; any other filter or sort name is a path into metadata. */
export const ENTRY_FIELDS = fieldMap({
  uuid: { sql: 'uuid', type: 'text' },
  name: { sql: 'name', type: 'text' },
  type: { sql: 'type', type: 'text' },
  creator: { sql: 'creator', type: 'text' },
  owner: { sql: 'owner', type: 'text' },
  created: { sql: 'created', type: 'date' },
  modified: { sql: 'modified', type: 'date' },
  size: { sql: 'size', type: 'number' },
  mimeType: { sql: 'mime_type', type: 'text' },
  sha256: { sql: 'sha256', type: 'text' },
  metadata: { sql: 'metadata', type: 'json' },
}, 'metadata');

const COLS = `uuid, sid, parent, name, type, metadata, creator, owner, created, modified, size, mime_type,
  sha256, content_version, path, preview_sha256, thumb_sha256, preview_of, preview_error`;
/** `COLS` of the row aliased `e` (statements joining entries to something else). */
const E_COLS = COLS.split(',').map((c) => `e.${c.trim()}`).join(', ');

/** Deterministic id of a service's root collection, so concurrent first uses agree. */
export function rootUuid(sid: string): string {
  const h = createHash('sha256').update(`wcr-root:${sid}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

/** Deterministic uuid derived from a seed (idempotent re-runs of commands). */
export function derivedUuid(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

export async function ensureRoot(sql: Sql, sid: string, path: string | null): Promise<EntryRow> {
  const uuid = rootUuid(sid);
  await sql.query(
    `INSERT INTO entries (uuid, sid, parent, name, type, path) VALUES ($1, $2, NULL, '', 'collection', $3)
     ON CONFLICT DO NOTHING`,
    [uuid, sid, path],
  );
  return (await getEntry(sql, sid, uuid))!;
}

export async function getEntry(sql: Sql, sid: string, uuid: string, lock = false): Promise<EntryRow | undefined> {
  const { rows } = await sql.query<EntryRow>(
    `SELECT ${COLS} FROM entries WHERE sid = $1 AND uuid = $2${lock ? ' FOR UPDATE' : ''}`,
    [sid, uuid],
  );
  return rows[0];
}

/** The entry named `name` in the collection `parent`, if any. */
export async function childNamed(sql: Sql, sid: string, parent: string, name: string): Promise<EntryRow | undefined> {
  const { rows } = await sql.query<EntryRow>(`SELECT ${COLS} FROM entries WHERE sid = $1 AND parent = $2 AND name = $3`, [sid, parent, name]);
  return rows[0];
}

export interface ListScope {
  /** Entries directly below this collection, or every entry of the service when undefined. */
  parent?: string;
  /** Only entries created or owned by one of these identities. */
  ownedBy?: string[];
}

export async function listEntries(sql: Sql, sid: string, scope: ListScope, q: ListQuery): Promise<EntryRow[]> {
  const params: unknown[] = [sid];
  const where = ['sid = $1'];
  if (scope.parent) {
    params.push(scope.parent);
    where.push(`parent = $${params.length}`);
  } else {
    where.push('parent IS NOT NULL');
  }
  if (scope.ownedBy) {
    params.push(scope.ownedBy);
    where.push(`(creator = ANY($${params.length}::text[]) OR owner = ANY($${params.length}::text[]))`);
  }
  // names are unique within a collection, so there `name` alone is a total order (and the index order)
  const frag = toSql(q, ENTRY_FIELDS, params, scope.parent ? 'name ASC' : 'name ASC, uuid ASC');
  params.push(q.limit, q.offset);
  const { rows } = await sql.query<EntryRow>(
    `SELECT ${COLS} FROM entries WHERE ${[...where, ...frag.where].join(' AND ')}
     ORDER BY ${frag.orderBy} LIMIT $${params.length - 1} OFFSET $${params.length}`,
    params,
  ).catch(throwSqlError);
  return rows;
}

export interface NewEntry {
  uuid: string;
  sid: string;
  parent: string;
  name: string;
  type: 'document' | 'collection';
  metadata: Record<string, unknown>;
  creator: string | null;
  owner: string | null;
  path?: string | null;
  content?: ContentInfo | null;
  /** With `content`: recorded at once as its preview outcome (a type no renderer takes). */
  noPreview?: string;
}

/** Inserts; returns undefined when the uuid already exists (idempotent command re-runs). */
export async function insertEntry(sql: Sql, e: NewEntry): Promise<EntryRow | undefined> {
  const { rows } = await sql.query<EntryRow>(
    `INSERT INTO entries (uuid, sid, parent, name, type, metadata, creator, owner, path, size, mime_type, sha256, content_version, preview_of, preview_error)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, CASE WHEN $14::text IS NULL THEN NULL ELSE $13 END, $14)
     ON CONFLICT (uuid) DO NOTHING RETURNING ${COLS}`,
    [e.uuid, e.sid, e.parent, e.name, e.type, JSON.stringify(e.metadata), e.creator, e.owner, e.path ?? null,
      e.content?.size ?? null, e.content?.mimeType ?? null, e.content?.sha256 ?? null, e.content?.version ?? null, e.content ? e.noPreview ?? null : null],
  );
  return rows[0];
}

/** A new document with its content, as `insertDocumentsUnder` inserts it. */
export type NewDocument = NewEntry & { content: ContentInfo };

/**
 * `insertEntry` of new documents with their content, each under its
 * `parent`, in one autocommitted statement that also checks each parent: it
 * must exist in the service and be a collection. Answers in the input's
 * order; undefined where nothing was inserted (the uuid exists, or the
 * parent does not: the caller finds out which the long way). A name in use
 * fails the statement on the unique index, as `insertEntry`.
 */
export async function insertDocumentsUnder(sql: Sql, es: readonly NewDocument[]): Promise<(EntryRow | undefined)[]> {
  const col = <T>(f: (e: NewDocument) => T) => es.map(f);
  const { rows } = await sql.query<EntryRow>(
    `INSERT INTO entries (uuid, sid, parent, name, type, metadata, creator, owner, path, size, mime_type, sha256, content_version, preview_of, preview_error)
     SELECT u.uuid, u.sid, p.uuid, u.name, 'document', u.metadata::jsonb, u.creator, u.owner, NULL, u.size, u.mime_type, u.sha256, u.version,
            CASE WHEN u.no_preview IS NULL THEN NULL ELSE u.version END, u.no_preview
       FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::text[], $11::text[], $12::text[])
         AS u(uuid, sid, parent, name, metadata, creator, owner, size, mime_type, sha256, version, no_preview)
       JOIN entries p ON p.sid = u.sid AND p.uuid = u.parent AND p.type = 'collection'
     ON CONFLICT (uuid) DO NOTHING RETURNING ${COLS}`,
    [col((e) => e.uuid), col((e) => e.sid), col((e) => e.parent), col((e) => e.name), col((e) => JSON.stringify(e.metadata)),
      col((e) => e.creator), col((e) => e.owner), col((e) => e.content.size), col((e) => e.content.mimeType), col((e) => e.content.sha256),
      col((e) => e.content.version), col((e) => e.noPreview ?? null)],
  );
  const byUuid = new Map(rows.map((r) => [r.uuid, r]));
  return es.map((e) => byUuid.get(e.uuid));
}

export async function updateRecord(
  sql: Sql, sid: string, uuid: string,
  rec: { name: string; metadata: Record<string, unknown>; owner: string | null; path?: string | null },
): Promise<EntryRow> {
  const { rows } = await sql.query<EntryRow>(
    `UPDATE entries SET name = $3, metadata = $4, owner = $5, path = COALESCE($6, path), modified = now()
     WHERE sid = $1 AND uuid = $2 RETURNING ${COLS}`,
    [sid, uuid, rec.name, JSON.stringify(rec.metadata), rec.owner, rec.path ?? null],
  );
  return rows[0]!;
}

export async function moveRecord(sql: Sql, sid: string, uuid: string, parent: string, name: string, path: string | null): Promise<EntryRow> {
  const { rows } = await sql.query<EntryRow>(
    `UPDATE entries SET parent = $3, name = $4, path = COALESCE($5, path), modified = now() WHERE sid = $1 AND uuid = $2 RETURNING ${COLS}`,
    [sid, uuid, parent, name, path],
  );
  return rows[0]!;
}

/** Records where the backend put a new entry. */
export async function setPath(sql: Sql, sid: string, uuid: string, path: string): Promise<EntryRow> {
  const { rows } = await sql.query<EntryRow>(`UPDATE entries SET path = $3 WHERE sid = $1 AND uuid = $2 RETURNING ${COLS}`, [sid, uuid, path]);
  return rows[0]!;
}

/** The entry below `path` with the longest path in bytes (the first to hit a file system's path limit). */
export async function deepestBelow(sql: Sql, sid: string, path: string): Promise<EntryRow | undefined> {
  const { rows } = await sql.query<EntryRow>(
    `SELECT ${COLS} FROM entries WHERE sid = $1 AND left(path, length($2) + 1) = $2 || '/'
     ORDER BY octet_length(path) DESC LIMIT 1`,
    [sid, path],
  );
  return rows[0];
}

/** Is `name` used in the collection (by an entry other than `except`)? Names are unique per collection. */
export async function nameTaken(sql: Sql, sid: string, parent: string, name: string, except?: string): Promise<boolean> {
  const { rowCount } = await sql.query(
    'SELECT 1 FROM entries WHERE sid = $1 AND parent = $2 AND name = $3 AND uuid IS DISTINCT FROM $4',
    [sid, parent, name, except ?? null],
  );
  return rowCount > 0;
}

/**
 * After a backend rename or move of a collection, the stored paths of every
 * row below it follow. Returns the number of rows updated. The prefix test
 * uses `left()`, not LIKE, so '%' and '_' in names are literal.
 */
export async function rewritePaths(tx: Sql, sid: string, oldPath: string, newPath: string): Promise<number> {
  if (oldPath === '') throw new Error('the root has no new path');
  const { rowCount } = await tx.query(
    `UPDATE entries SET path = $3 || substr(path, length($2) + 1)
     WHERE sid = $1 AND left(path, length($2) + 1) = $2 || '/'`,
    [sid, oldPath, newPath],
  );
  return rowCount;
}

export async function setContent(
  sql: Sql, sid: string, uuid: string,
  c: ContentInfo | null,
  /** Recorded at once as this content's preview outcome (a type no renderer takes), in the same statement. */
  noPreview?: string,
): Promise<EntryRow> {
  // one statement: a second UPDATE of the row in the same transaction would re-check its parent's
  // foreign key (the row is then this transaction's own), waiting on a delete that locked the parent
  const { rows } = await sql.query<EntryRow>(
    `UPDATE entries SET size = $3, mime_type = $4, sha256 = $5, content_version = $6, modified = now(),
       preview_sha256 = NULL, thumb_sha256 = NULL, preview_of = CASE WHEN $7::text IS NULL THEN NULL ELSE $6 END, preview_error = $7
     WHERE sid = $1 AND uuid = $2 RETURNING ${COLS}`,
    [sid, uuid, c?.size ?? null, c?.mimeType ?? null, c?.sha256 ?? null, c?.version ?? null, c && noPreview ? noPreview : null],
  );
  return rows[0]!;
}

/** Records a rendered preview, unless the content changed meanwhile. */
export async function setPreview(
  sql: Sql, sid: string, uuid: string, version: string,
  p: { preview: string | null; thumb: string | null; error: string | null },
): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE entries SET preview_sha256 = $4, thumb_sha256 = $5, preview_error = $6, preview_of = $3
     WHERE sid = $1 AND uuid = $2 AND content_version = $3`,
    [sid, uuid, version, p.preview, p.thumb, p.error],
  );
  return rowCount > 0;
}

/** Gives `to` the preview `from` has for the same content; false when there is none to take. */
export async function copyPreview(sql: Sql, sid: string, from: string, to: string): Promise<boolean> {
  const { rowCount } = await sql.query(
    `UPDATE entries t SET preview_sha256 = f.preview_sha256, thumb_sha256 = f.thumb_sha256,
       preview_of = f.preview_of, preview_error = f.preview_error
     FROM entries f
     WHERE f.sid = $1 AND f.uuid = $2 AND t.sid = $1 AND t.uuid = $3
       AND f.preview_of IS NOT NULL AND f.preview_of = t.content_version`,
    [sid, from, to],
  );
  return rowCount > 0;
}

export async function deleteEntry(sql: Sql, sid: string, uuid: string): Promise<void> {
  await sql.query('DELETE FROM entries WHERE sid = $1 AND uuid = $2', [sid, uuid]);
}

// ---------------------------------------------------------------- rows a backend keeps in step (entry-rows.ts)

/** Rows per bulk statement of a sync: keeps each parameter array a few hundred KB. */
const SYNC_BATCH = 5_000;

/** What a sync compares with the disk: the direct children of `parent`. */
export async function syncChildren(sql: Sql, sid: string, parent: string): Promise<SyncChild[]> {
  const { rows } = await sql.query<SyncChild>(
    'SELECT uuid, name, type, size, modified, content_version FROM entries WHERE sid = $1 AND parent = $2',
    [sid, parent],
  );
  return rows;
}

/** The collections with a path directly below `parent` (a recursive sync descends into them). */
export async function childCollections(sql: Sql, sid: string, parent: string): Promise<{ uuid: string; path: string }[]> {
  const { rows } = await sql.query<{ uuid: string; path: string }>(
    `SELECT uuid, path FROM entries WHERE sid = $1 AND parent = $2 AND type = 'collection' AND path IS NOT NULL`,
    [sid, parent],
  );
  return rows;
}

/**
 * Inserts rows for entries found below `parent`, with fresh ids. ON CONFLICT
 * DO NOTHING: a concurrent sync of the same collection may insert the same names.
 */
export async function insertFound(sql: Sql, sid: string, parent: string, found: readonly FoundEntry[]): Promise<void> {
  for (let i = 0; i < found.length; i += SYNC_BATCH) {
    const chunk = found.slice(i, i + SYNC_BATCH);
    await sql.query(
      `INSERT INTO entries (uuid, sid, parent, name, type, path, size, mime_type, content_version, created, modified)
       SELECT x.uuid, $1, $2::uuid, x.name, x.type, x.path, x.size, x.mime, x.cv, x.created, x.modified
         FROM unnest($3::uuid[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[],
                     $10::timestamptz[], $11::timestamptz[])
           AS x(uuid, name, type, path, size, mime, cv, created, modified)
       ON CONFLICT DO NOTHING`,
      [
        sid, parent,
        chunk.map(() => randomUUID()),
        chunk.map((e) => e.name),
        chunk.map((e) => e.type),
        chunk.map((e) => e.path),
        chunk.map((e) => e.size),
        chunk.map((e) => e.mimeType),
        chunk.map((e) => e.contentVersion),
        chunk.map((e) => e.created.toISOString()),
        chunk.map((e) => e.modified.toISOString()),
      ],
    );
  }
}

/**
 * Deletes children of `parent` that still have the name and type seen: an
 * entry renamed through the API meanwhile (disk renamed, row locked until
 * COMMIT) is re-checked against its new row and kept.
 */
export async function deleteSeen(sql: Sql, sid: string, parent: string, seen: readonly SeenChild[]): Promise<void> {
  for (let i = 0; i < seen.length; i += SYNC_BATCH) {
    const chunk = seen.slice(i, i + SYNC_BATCH);
    await sql.query(
      `DELETE FROM entries e USING unnest($2::uuid[], $3::text[], $4::text[]) AS x(uuid, name, type)
        WHERE e.sid = $1 AND e.parent = $5 AND e.uuid = x.uuid AND e.name = x.name AND e.type = x.type`,
      [sid, chunk.map((r) => r.uuid), chunk.map((r) => r.name), chunk.map((r) => r.type), parent],
    );
  }
}

/**
 * Deletes the children of `parent` still below `path` (its directory is gone):
 * a collection renamed through the API holds its rows' locks while the disk
 * already shows the new name; once it commits, its rows no longer match.
 */
export async function deleteChildrenBelow(sql: Sql, sid: string, parent: string, path: string): Promise<void> {
  await sql.query(
    `DELETE FROM entries WHERE sid = $1 AND parent = $2 AND left(path, length($3) + 1) = $3 || '/'`,
    [sid, parent, path],
  );
}

/**
 * Deletes the entry unless its path moved meanwhile: a rename or move through
 * the API holds the row lock while the disk already shows the new place, and
 * this DELETE waits for it, then finds the new path. False when nothing went.
 */
export async function deleteAtPath(sql: Sql, sid: string, uuid: string, path: string): Promise<boolean> {
  const { rowCount } = await sql.query('DELETE FROM entries WHERE sid = $1 AND uuid = $2 AND path = $3', [sid, uuid, path]);
  return rowCount > 0;
}

/** Records content changed behind the service's back; the sha256 is unknown again until the content is read or rewritten. */
export async function updateFoundContent(sql: Sql, sid: string, changes: readonly ChangedContent[]): Promise<EntryRow[]> {
  const out: EntryRow[] = [];
  for (let i = 0; i < changes.length; i += SYNC_BATCH) {
    const chunk = changes.slice(i, i + SYNC_BATCH);
    const { rows } = await sql.query<EntryRow>(
      `UPDATE entries e SET size = x.size, modified = x.modified, content_version = x.cv, sha256 = NULL,
              mime_type = COALESCE(e.mime_type, x.mime)
         FROM unnest($2::uuid[], $3::bigint[], $4::timestamptz[], $5::text[], $6::text[]) AS x(uuid, size, modified, cv, mime)
        WHERE e.sid = $1 AND e.uuid = x.uuid
        RETURNING ${E_COLS}`,
      [
        sid,
        chunk.map((c) => c.uuid),
        chunk.map((c) => c.size),
        chunk.map((c) => c.modified.toISOString()),
        chunk.map((c) => c.contentVersion),
        chunk.map((c) => c.mimeType),
      ],
    );
    out.push(...rows);
  }
  return out;
}

/** The entry and all entries below it, collections before their children. */
export async function subtree(sql: Sql, sid: string, uuid: string): Promise<EntryRow[]> {
  const { rows } = await sql.query<EntryRow>(
    `WITH RECURSIVE t AS (
       SELECT ${COLS}, 0 AS depth FROM entries WHERE sid = $1 AND uuid = $2
       UNION ALL
       SELECT ${E_COLS}, t.depth + 1 FROM entries e
       -- within the service (the (sid, parent, name) index), and only below collections: no scan of the whole table per level
       JOIN t ON e.sid = $1 AND e.parent = t.uuid WHERE t.type = 'collection'
     ) SELECT ${COLS} FROM t ORDER BY depth, name`,
    [sid, uuid],
  );
  return rows;
}

/** A subtree locked by `lockSubtree`: its root as locked, and how many entries it holds (the root included). */
export interface LockedSubtree {
  root: EntryRow;
  size: number;
  /** With `users`: the tasks in status processing that use an entry of the subtree. */
  users?: TaskRef[];
  /** The ids of the subtree's entries. */
  uuids: string[];
}

type TaskRow = { tid: string; sid: string; status: string };
const taskRef = (r: TaskRow): TaskRef => ({ ...r, href: `/v1/services/${encodeURIComponent(r.sid)}/tasks/${r.tid}` });

/** The tasks in status processing whose input lists use an entry of the CTE `t` (its `uuid`s), as a JSON array. */
const USERS_OF_T = `(
  SELECT coalesce(json_agg(u ORDER BY u.tid), '[]'::json) FROM (
    SELECT DISTINCT k.tid, k.sid, k.status FROM list_items i
      JOIN lists l ON l.lid = i.lid AND l.kind = 'input'
      JOIN tasks k ON k.tid = l.tid
    WHERE i.doc_uuid = ANY (ARRAY(SELECT uuid FROM t)) AND k.status = 'processing') u)`;

/**
 * The tasks whose input lists name any of `uuids`, their rows share-locked
 * (`FOR SHARE`, in tid order) for the rest of the transaction; those in status
 * processing are returned. A start takes the same rows `FOR NO KEY UPDATE`
 * (`lockForStart` of the task store), so the two take turns: a start that
 * committed first is seen here on the row's latest version (409 for the
 * caller), and one that comes later waits for this transaction, then runs
 * without the document (its item fails, naming it). Every user is locked, not
 * only the processing ones: an idle task is what a start could move.
 */
async function lockUsers(tx: Sql, uuids: readonly string[]): Promise<TaskRef[]> {
  if (uuids.length === 0) return [];
  const { rows } = await tx.query<TaskRow>(
    `SELECT k.tid, k.sid, k.status FROM tasks k
     WHERE k.tid = ANY(ARRAY(SELECT l.tid FROM list_items i JOIN lists l ON l.lid = i.lid AND l.kind = 'input' WHERE i.doc_uuid = ANY($1::uuid[])))
     ORDER BY k.tid FOR SHARE OF k`,
    [[...uuids]],
  );
  return rows.filter((r) => r.status === 'processing').map(taskRef);
}

/**
 * Locks the entry and every entry below it (`FOR UPDATE`) for the rest of the
 * transaction and returns the entry with the subtree's size, or undefined when
 * it is gone. Deletes,
 * renames and content writes take these locks before they touch the disk, so
 * two of them on the same entry (or on a collection and something inside it)
 * run one after the other. Rows are locked in uuid order, one global order,
 * so overlapping subtrees cannot deadlock. With `users`, a second statement
 * then locks the tasks using the subtree (`lockUsers`: a delete's in-use rule,
 * which a start cannot slip past) and reports those in status processing.
 */
export async function lockSubtree(tx: Sql, sid: string, uuid: string, opts: { users?: boolean } = {}): Promise<LockedSubtree | undefined> {
  // One statement: every row of the subtree locked (in uuid order, so two lockers cannot deadlock),
  // the root's columns read from its locked (latest) version, the others' left null: only counted.
  // Only collections are descended into, and the rows are locked through the primary key
  // (= ANY of the ids found): the planner cannot tell a document's empty subtree from a large
  // collection's, and joined the table by sequential scans, twice per locked document.
  const rootOnly = COLS.split(',').map((c) => c.trim()).map((c) => (c === 'uuid' ? 'e.uuid' : `CASE WHEN e.uuid = $2 THEN e.${c} END AS ${c}`));
  const { rows } = await tx.query<EntryRow>(
    `WITH RECURSIVE t AS (
       SELECT uuid, type FROM entries WHERE sid = $1 AND uuid = $2
       UNION ALL
       SELECT e.uuid, e.type FROM entries e JOIN t ON e.sid = $1 AND e.parent = t.uuid WHERE t.type = 'collection'
     ) SELECT ${rootOnly.join(', ')} FROM entries e WHERE e.sid = $1 AND e.uuid = ANY (ARRAY(SELECT uuid FROM t)) ORDER BY e.uuid FOR UPDATE OF e`,
    [sid, uuid],
  );
  const root = rows.find((r) => r.uuid === uuid);
  if (!root) return undefined;
  // the tasks after the entries (the lock order): in a statement of its own, whose snapshot is taken
  // once the entries are locked, and whose share locks return each task row's latest version
  return { root, size: rows.length, uuids: rows.map((r) => r.uuid), ...(opts.users ? { users: await lockUsers(tx, rows.map((r) => r.uuid)) } : {}) };
}

/** Is `ancestor` the entry itself or above it? (moves into oneself are refused) */
export async function isAncestorOrSelf(sql: Sql, sid: string, ancestor: string, uuid: string): Promise<boolean> {
  const { rows } = await sql.query<{ hit: boolean }>(
    `WITH RECURSIVE up AS (
       SELECT uuid, parent FROM entries WHERE sid = $1 AND uuid = $2
       UNION ALL
       SELECT e.uuid, e.parent FROM entries e JOIN up ON e.uuid = up.parent
     ) SELECT EXISTS (SELECT 1 FROM up WHERE uuid = $3) AS hit`,
    [sid, uuid, ancestor],
  );
  return rows[0]?.hit ?? false;
}

/** The service's change counter (moves on every entry change; see migration 002). */
export async function generation(sql: Sql, sid: string): Promise<number> {
  const { rows } = await sql.query<{ gen: number }>('SELECT gen FROM repo_generations WHERE sid = $1', [sid]);
  return rows[0]?.gen ?? 0;
}

/** Tasks in status processing whose input lists use any of these documents. */
export async function activeTasksUsing(sql: Sql, uuids: string[]): Promise<TaskRef[]> {
  if (uuids.length === 0) return [];
  const { rows } = await sql.query<TaskRow>(
    `SELECT DISTINCT t.tid, t.sid, t.status FROM list_items i
       JOIN lists l ON l.lid = i.lid AND l.kind = 'input'
       JOIN tasks t ON t.tid = l.tid
     WHERE i.doc_uuid = ANY($1::uuid[]) AND t.status = 'processing'
     ORDER BY t.tid`,
    [uuids],
  );
  return rows.map(taskRef);
}

/**
 * `getEntry` and `activeTasksUsing` over the entry's subtree in one statement
 * (one round trip where a change of the entry first looks whether tasks use
 * it). The root collection's users are not looked up (`users` is empty): no
 * caller changes the root, and looking would walk the whole service.
 */
export async function getEntryWithUsers(sql: Sql, sid: string, uuid: string): Promise<{ entry: EntryRow; users: TaskRef[] } | undefined> {
  const { rows } = await sql.query<EntryRow & { users: TaskRow[] }>(
    `WITH RECURSIVE t AS (
       SELECT uuid, type FROM entries WHERE sid = $1 AND uuid = $2 AND parent IS NOT NULL
       UNION ALL
       SELECT e.uuid, e.type FROM entries e JOIN t ON e.sid = $1 AND e.parent = t.uuid WHERE t.type = 'collection'
     )
     SELECT ${COLS}, ${USERS_OF_T} AS users FROM entries WHERE sid = $1 AND uuid = $2`,
    [sid, uuid],
  );
  const row = rows[0];
  if (!row) return undefined;
  const { users, ...entry } = row;
  return { entry: entry as EntryRow, users: users.map(taskRef) };
}

/** Of these document ids, the ones not used by any task in status processing. */
export async function inactiveOf(sql: Sql, uuids: string[]): Promise<string[]> {
  if (uuids.length === 0) return [];
  const { rows } = await sql.query<{ uuid: string }>(
    `SELECT u.uuid FROM unnest($1::uuid[]) WITH ORDINALITY AS u(uuid, ord)
     WHERE NOT EXISTS (
       SELECT 1 FROM list_items i JOIN lists l ON l.lid = i.lid AND l.kind = 'input'
         JOIN tasks t ON t.tid = l.tid
       WHERE i.doc_uuid = u.uuid AND t.status = 'processing')
     ORDER BY u.ord`,
    [uuids],
  );
  return rows.map((r) => r.uuid);
}

/** Documents whose preview is missing for their current content (reconciler). */
export async function pendingPreviews(sql: Sql, limit: number): Promise<{ sid: string; uuid: string; version: string }[]> {
  const { rows } = await sql.query<{ sid: string; uuid: string; version: string }>(
    `SELECT sid, uuid, content_version AS version FROM entries
     WHERE content_version IS NOT NULL AND preview_of IS DISTINCT FROM content_version LIMIT $1`,
    [limit],
  );
  return rows;
}

/** Which of these blob hashes some entry still references (blob garbage collection). */
export async function referencedBlobs(sql: Sql, hashes: string[]): Promise<Set<string>> {
  const { rows } = await sql.query<{ h: string }>(
    `SELECT h FROM unnest($1::text[]) AS h WHERE EXISTS (
       SELECT 1 FROM entries WHERE sha256 = h OR preview_sha256 = h OR thumb_sha256 = h)
       -- print jobs' documents and stage files (migration 009) share the blob store
       OR EXISTS (SELECT 1 FROM print_jobs WHERE blob_sha256 = h OR stages @> jsonb_build_array(jsonb_build_object('sha256', h)))`,
    [hashes],
  );
  return new Set(rows.map((r) => r.h));
}
