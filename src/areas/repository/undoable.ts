import type { Database, Sql } from '../../storage/driver/database.js';

/** Registers how to take back a change made outside the database (a rename on disk, a new file). */
export type OnRollback = (undo: () => Promise<unknown>) => void;

/**
 * Runs `fn` in one transaction. A change `fn` makes outside the database
 * (on disk) registers its undo with `onRollback`; when the transaction fails,
 * in `fn` (undone before the rollback, locks still held) or at COMMIT (undone
 * after it), the undos run newest first, so the disk and the rows agree again. The usual shape: lock and write rows first (they can still
 * fail), change the disk last, register the undo right after it.
 *
 * An undo that fails itself leaves disk and rows apart: that is reported as
 * an AggregateError (a 500 with both causes in the log), never hidden.
 */
export async function transactionWithUndo<T>(db: Database, fn: (tx: Sql, onRollback: OnRollback) => Promise<T>): Promise<T> {
  const undos: (() => Promise<unknown>)[] = [];
  const undoAll = async (err: unknown): Promise<never> => {
    const failed: unknown[] = [];
    for (const undo of undos.splice(0).reverse()) await undo().catch((e: unknown) => failed.push(e));
    if (failed.length > 0) throw new AggregateError([err, ...failed], 'a failed change could not be undone on disk');
    throw err;
  };
  try {
    return await db.transaction(async (tx) => {
      try {
        return await fn(tx, (undo) => undos.push(undo));
      } catch (err) {
        // Undone while the row locks are still held, so no reader sees the disk changed and the
        // row not (a refresh would take the entry for gone); only a failed COMMIT undoes after.
        return await undoAll(err);
      }
    });
  } catch (err) {
    return undoAll(err);
  }
}
