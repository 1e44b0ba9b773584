/**
 * The shapes every list format reads and writes (docs/formats.md). A list is
 * a name, metadata and ordered items `{ href, metadata }`, the same whether it
 * arrives as JSON, CSV or RList, so tasks, lists and scheduled imports handle
 * one shape and never the text.
 */

/** Metadata as stored: a JSON object. Parsers produce strings at the leaves (JSON keeps its types). */
export type Metadata = Record<string, unknown>;

/** One list item as the formats see it. */
export interface ListItem {
  href: string;
  metadata: Metadata;
}

/**
 * Where a parsed item came from, ready to spread into an error's `details`
 * (`{ row }` for CSV, `{ section }` for RList, `{ index }` for JSON), so a
 * caller that rejects an item later (say, an href naming no document) names
 * the same place the parser would have.
 */
export type ItemLocation = { row: number } | { section: string } | { index: number };

export interface ParsedListItem extends ListItem {
  at: ItemLocation;
}

/** The list's own fields. */
export interface ListHeader {
  name?: string;
  metadata: Metadata;
}

/**
 * A list being parsed from a stream. `items` yields as the input arrives and
 * rejects with the first error (an `AppError`, 400 naming row/section and
 * column/key, or 413 past `maxItems`); it can be read once. `header()` is
 * known only once `items` has been read to the end, because CSV may carry list
 * values on any row and RList sections may come in any order; before that it
 * throws. Callers write everything in one transaction after (or while)
 * reading, so a bad row leaves nothing half-created.
 */
export interface ParsedList {
  items: AsyncIterable<ParsedListItem>;
  header(): ListHeader;
}

/**
 * A list to write. `items` is a factory because CSV reads the items twice (the
 * header row needs every key before the first row); each call must yield the
 * same items in the same order, e.g. a fresh paged query.
 */
export interface ListSource extends ListHeader {
  items(): AsyncIterable<ListItem>;
}

/** Bounds that keep a parser's memory flat whatever the input. */
export interface ListLimits {
  /** Items in one list; more is 413 `LIST_TOO_LARGE`. */
  maxItems: number;
  /** Leaf keys in one metadata object (the list's, or one item's). */
  maxKeys: number;
  /** Size of one CSV record (csv-parse counts bytes) or one RList entry (characters; quoted values may span lines). */
  maxRecordChars: number;
  /** Bytes of a JSON body, which is parsed whole. */
  maxJsonBytes: number;
}

export const DEFAULT_LIST_LIMITS: ListLimits = {
  maxItems: 10_000,
  maxKeys: 200,
  maxRecordChars: 64 * 1024,
  maxJsonBytes: 16 * 1024 * 1024,
};

/** Reads a parsed list whole: for callers that insert after parsing. Memory is bounded by the limits. */
export async function collectList(parsed: ParsedList): Promise<ListHeader & { items: ParsedListItem[] }> {
  const items: ParsedListItem[] = [];
  for await (const item of parsed.items) items.push(item);
  return { ...parsed.header(), items };
}

/**
 * An item stream that can also hand its items over in arrays, as they
 * arrive: a large import reads those (`batchesOf`), which costs no promise
 * per item. Iterating it item by item yields the same items once.
 */
export interface ItemBatches<T> extends AsyncIterable<T> {
  batches(): AsyncIterable<T[]>;
}

/** The stream whose `batches()` is `batches` (read once) and whose items are theirs, in order. */
export function fromBatches<T>(batches: AsyncIterable<T[]>): ItemBatches<T> {
  return {
    batches: () => batches,
    async *[Symbol.asyncIterator]() {
      for await (const batch of batches) yield* batch;
    },
  };
}

/** A stream's items in arrays: its own batches when it has them, else arrays of up to `size` items. */
export async function* batchesOf<T>(items: AsyncIterable<T>, size = 1000): AsyncGenerator<T[]> {
  if (typeof (items as Partial<ItemBatches<T>>).batches === 'function') {
    yield* (items as ItemBatches<T>).batches();
    return;
  }
  let batch: T[] = [];
  for await (const item of items) {
    batch.push(item);
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length > 0) yield batch;
}

/** Fails a `header()` call made before the items were read to the end. */
export function headerNotReady(): never {
  throw new Error('the list header is known only after its items were read to the end');
}
