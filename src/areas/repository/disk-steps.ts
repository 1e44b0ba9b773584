import type { RepositoryBackend } from '../../connectors/connector.js';
import type { Sql } from '../../storage/driver/database.js';
import { throwSqlError } from '../../errors/sql-errors.js';
import type { EntryRow } from './entry.js';
import * as store from './entry-store.js';
import { entryRows } from './entry-rows.js';
import type { OnRollback } from './undoable.js';

/**
 * Entry writes that change a backend's objects (files) inside a transaction of
 * `transactionWithUndo`: rows first where they can fail, the disk change next,
 * its inverse registered at once. Used by `RepositoryService` and the
 * `copy`/`move` commands.
 */


/**
 * Inside a transaction of `transactionWithUndo`: inserts the row, then lets
 * `make` create the backend's object, registering its removal. The row comes
 * first: a name taken meanwhile or a parent deleted meanwhile fails before the
 * disk changes, and a listing's sync that sees the new file waits for this row
 * instead of adopting the file as an entry without creator. Undefined when
 * the uuid exists already (an idempotent re-run); `make` is then not called.
 */
export async function insertThenMake(tx: Sql, onRollback: OnRollback, backend: RepositoryBackend, row: store.NewEntry, make: () => Promise<{ path?: string }>): Promise<EntryRow | undefined> {
  const inserted = await store.insertEntry(tx, { ...row, path: null }).catch(throwSqlError);
  if (!inserted) return undefined;
  const made = await make();
  onRollback(() => backend.remove({ ...inserted, path: made.path ?? null }));
  return made.path === undefined ? inserted : store.setPath(tx, row.sid, row.uuid, made.path).catch(throwSqlError);
}

/**
 * Renames the backend's object inside a transaction of `transactionWithUndo`
 * and points the rows below it at the new path; registers the rename back.
 * Returns the new path (undefined for backends without paths).
 */
export async function renameOnDisk(tx: Sql, onRollback: OnRollback, backend: RepositoryBackend, entry: EntryRow, name: string): Promise<string | undefined> {
  const { path } = await backend.rename(entry, name);
  onRollback(() => backend.rename({ ...entry, name, path: path ?? entry.path }, entry.name));
  await followPath(tx, backend, entry, path);
  return path;
}

/**
 * After the backend renamed or moved `entry` to `path`: the stored paths
 * below follow, and the deepest of them must still be reachable (a longer
 * name can push it past the file system's path limit: 400 NAME_TOO_LONG
 * from the backend, and the transaction's undo puts the old name back).
 */
export async function followPath(tx: Sql, backend: RepositoryBackend, entry: EntryRow, path: string | undefined): Promise<void> {
  if (path === undefined || !entry.path || path === entry.path) return;
  await store.rewritePaths(tx, entry.sid, entry.path, path);
  if (entry.type !== 'collection' || !backend.refresh) return;
  const deepest = await store.deepestBelow(tx, entry.sid, path);
  if (deepest) await backend.refresh(entryRows(tx, entry.sid), deepest);
}
