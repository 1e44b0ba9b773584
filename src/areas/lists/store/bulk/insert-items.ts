import { AppError } from '../../../../errors/app-error.js';
import { throwSqlError } from '../../../../errors/sql-errors.js';
import { batchesOf } from '../../../../formats/index.js';
import type { Tx } from '../../../../storage/driver/database.js';
import { docRef } from '../doc-href.js';
import { insertItemRows, itemCopier, lockForImport, setItemCount, type StoreItem } from '../list-store.js';
import { copyEncodable } from './copy-encodable.js';
import { CopyRows } from './copy-rows.js';

/** Rows per multi-row INSERT of a batch import: large enough to amortize the round trip, small enough to stay well under a megabyte or so of parameters. */
export const INSERT_CHUNK = 2000;
/**
 * Rows per COPY of a streamed import (about 2 MB of binary rows): fewer
 * statements cost PostgreSQL about a tenth less CPU per row than COPYs of
 * 2,000 (per-statement set-up, the lid trigger once per statement), and a
 * statement's transition table (the lid trigger) still fits in `work_mem`.
 */
export const COPY_CHUNK = 10_000;

/** How `insertItemsFrom` writes. */
export interface InsertOptions {
  /** Rows per statement (default `COPY_CHUNK` with COPY, else `INSERT_CHUNK`). */
  chunkRows?: number;
  /** The list was created by this transaction (empty, invisible to others): it is neither locked nor read first. */
  newList?: boolean;
  /** A handful of items (known to the caller): one multi-row INSERT, fewer round trips than a COPY. */
  few?: boolean;
}

/** Up to how many items a caller passes `few` (an intake's task: one document). */
export const FEW_ITEMS = 100;

/**
 * Inserts items as they arrive from `items` (a parser's output, read in its
 * batches when it has them) at the end of the list, inside the caller's
 * transaction: chunks of `chunkRows` rows, each one binary `COPY … FROM
 * STDIN` where the driver has it (PostgreSQL, `COPY_CHUNK` rows by default)
 * or one multi-row INSERT (PGlite, `INSERT_CHUNK`), the next chunk being
 * gathered while the previous one is in flight. Items that come already
 * encoded (`CopyEncodable`: a CSV body, encoded in the CSV import thread)
 * are read as their payloads on PostgreSQL, one COPY each. The list row
 * stays locked until the transaction ends; its counter is set once at the
 * end. A failing iterator (a bad row) rejects, and the caller's rollback
 * removes everything. Returns the number inserted. Every statement is the
 * list store's.
 */
export async function insertItemsFrom(tx: Tx, lid: string, items: AsyncIterable<StoreItem>, opts: InsertOptions = {}): Promise<number> {
  // a list this transaction made is empty and seen by nobody else: no lock, no count to read
  const list = opts.newList ? { lid, base: 0 } : await lockForImport(tx, lid);
  if (!list) throw new AppError('LIST_NOT_FOUND', 'the list does not exist');
  const { base } = list;
  const copy = opts.few ? undefined : itemCopier(tx);
  const chunk = opts.chunkRows ?? (copy ? COPY_CHUNK : INSERT_CHUNK);
  let count = 0;
  let pending: StoreItem[] = [];
  const copyRows = new CopyRows(list.lid);
  let inFlight: Promise<unknown> | undefined;
  const send = (statement: Promise<unknown>) => {
    inFlight = statement.catch(throwSqlError);
    // an error surfaces at the next await; until then it must not count as unhandled
    inFlight.catch(() => undefined);
  };
  const flush = async () => {
    if (inFlight) await inFlight;
    copyRows.sent();
    if (copy) {
      if (copyRows.rows > 0) send(copy(copyRows.take()));
    } else if (pending.length > 0) {
      send(insertItemRows(tx, lid, base + count - pending.length, pending));
      pending = [];
    }
  };
  const encodable = copy ? copyEncodable(items) : undefined;
  try {
    if (copy && encodable) {
      // encoded elsewhere (the CSV import thread): only the payloads pass here, one COPY in flight while the next is encoded
      for await (const payload of encodable.copyChunks({ lid: list.lid, base, chunkRows: chunk })) {
        if (inFlight) await inFlight;
        send(copy(payload.data).finally(payload.done));
        count += payload.rows;
      }
    } else {
      for await (const batch of batchesOf(items, chunk)) {
        if (copy) {
          for (let i = 0; i < batch.length; i++) {
            const item = batch[i]!;
            const ref = item.doc !== undefined ? item.doc : docRef(item.href);
            copyRows.add(base + count, item.href, ref ?? null, item.metadata);
            count++;
            if (copyRows.rows >= chunk) await flush();
          }
        } else {
          for (const item of batch) {
            pending.push(item);
            count++;
            if (pending.length >= chunk) await flush();
          }
        }
      }
    }
    await flush();
    if (inFlight) await inFlight;
  } finally {
    // on a parse error, wait for the statement in flight before the caller rolls back
    if (inFlight) await inFlight.catch(() => undefined);
  }
  await setItemCount(tx, lid, base + count);
  return count;
}
