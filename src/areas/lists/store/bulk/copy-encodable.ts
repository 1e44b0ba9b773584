/**
 * The binary COPY side of a bulk import: items that arrive already encoded
 * as `list_items` rows in PostgreSQL's binary COPY format (copy-rows.ts), so
 * the store only moves their bytes.
 */

/** Where encoded rows go: the list, the position of the first row, rows per payload (one COPY each). */
export interface CopyTarget {
  /** The list's id as PostgreSQL spells it. */
  lid: string;
  base: number;
  chunkRows: number;
}

/** One finished payload of binary COPY data of `list_items` (copy-rows.ts); `done()` once it is written, which frees room for the next. */
export interface CopyChunk {
  data: Buffer;
  rows: number;
  done(): void;
}

/**
 * Items that can also be handed over already encoded as binary COPY payloads
 * (a CSV body read by the CSV import thread, csv-thread.ts): a store with
 * COPY reads `copyChunks` instead of the items, and only moves bytes. Either
 * the items or the chunks are read, once. `checkHrefs` applies `checkHref`
 * (doc-href.ts) to every row, as `checkedItems` (checked-items.ts) does.
 */
export interface CopyEncodable {
  copyChunks(target: CopyTarget, opts?: { checkHrefs?: boolean }): AsyncIterable<CopyChunk>;
}

/** The items' `copyChunks` when they have them. */
export function copyEncodable(items: AsyncIterable<unknown>): CopyEncodable | undefined {
  const candidate = items as Partial<CopyEncodable>;
  return typeof candidate.copyChunks === 'function' ? (candidate as CopyEncodable) : undefined;
}
