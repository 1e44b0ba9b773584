import type { Readable } from 'node:stream';
import { DEFAULT_LIST_LIMITS, parseList, type ListFormat, type ListLimits, type ParsedList } from '../../../../formats/index.js';
import { withCsvThread } from './csv-thread.js';

/**
 * A list body parsed for a bulk import (`insertItemsFrom`): `parseList`'s
 * items, and for CSV also the same body as COPY payloads encoded in the CSV
 * import thread, which a store with COPY reads instead (the parse and the
 * encoding then cost the request's thread nothing).
 */
export function parseForImport(format: ListFormat, source: Readable, limits: Partial<ListLimits> = {}): ParsedList {
  const parsed = parseList(format, source, limits);
  return format.name === 'csv' ? withCsvThread(parsed, source, { ...DEFAULT_LIST_LIMITS, ...limits }) : parsed;
}
