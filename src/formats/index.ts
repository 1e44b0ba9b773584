import type { Readable } from 'node:stream';
import { AppError } from '../errors/app-error.js';
import { parseCsv, writeCsv } from './csv.js';
import { parseJson, writeJson } from './json.js';
import { DEFAULT_LIST_LIMITS, type ListLimits, type ListSource, type ParsedList } from './list-document.js';
import { parseRlist, writeRlist } from './rlist.js';

/**
 * The list formats (docs/formats.md), chosen by `Content-Type` for import and
 * by `Accept` for export. JSON comes first: it is the default both ways.
 */

/** One list format, as `exportTypes` / `importTypes` present it. */
export interface ListFormat {
  name: 'json' | 'csv' | 'rlist';
  description: string;
  mimeType: 'application/json' | 'text/csv' | 'application/rli';
}

export const LIST_FORMATS: readonly ListFormat[] = [
  { name: 'json', description: 'JSON: { name, metadata, embedded: { listItems: [ { href, metadata } ] } }', mimeType: 'application/json' },
  { name: 'csv', description: 'CSV with a header row of list.name, list.metadata.<key>, item.href, item.metadata.<key>', mimeType: 'text/csv' },
  { name: 'rlist', description: 'RList (repro list): [LIST], [PROGRAM], [PROCESSING], [JOBINFO], [SENDER] and [DOCUMENT_<n>] sections', mimeType: 'application/rli' },
];

/** `exportTypes` and `importTypes` of GET /lists: exactly these three. */
export const listTypes = () => LIST_FORMATS.map(({ name, description, mimeType }) => ({ name, description, mimeType }));

const UTF8 = new Set(['utf-8', 'utf8', 'us-ascii']);

/**
 * The format of a request body by its `Content-Type`: none means JSON; an
 * unknown type or a charset other than UTF-8 is 415.
 */
export function importFormat(contentType: string | undefined): ListFormat {
  if (!contentType || contentType.trim() === '') return LIST_FORMATS[0]!;
  const [type = '', ...params] = contentType.split(';').map((p) => p.trim().toLowerCase());
  const format = LIST_FORMATS.find((f) => f.mimeType === type);
  if (!format) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `lists are imported from ${LIST_FORMATS.map((f) => f.mimeType).join(', ')}, not ${type}`);
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/^"|"$/g, '');
  if (charset !== undefined && !UTF8.has(charset)) throw new AppError('UNSUPPORTED_MEDIA_TYPE', `list bodies must be UTF-8, not ${charset}`);
  return format;
}

/**
 * The export format the client accepts, through the caller's negotiation
 * (Koa's `ctx.accepts`, which answers the first type when there is no
 * `Accept`, so JSON is the default); none of the three is 406.
 */
export function exportFormat(accepts: (...types: string[]) => string | false): ListFormat {
  const chosen = accepts(...LIST_FORMATS.map((f) => f.mimeType));
  const format = LIST_FORMATS.find((f) => f.mimeType === chosen);
  if (!format) throw new AppError('NOT_ACCEPTABLE', `lists are exported as ${LIST_FORMATS.map((f) => f.mimeType).join(', ')}`);
  return format;
}

/** Parses a list body as it streams in (see `ParsedList`), on the calling thread. */
export function parseList(format: ListFormat, source: Readable, limits: Partial<ListLimits> = {}): ParsedList {
  const all = { ...DEFAULT_LIST_LIMITS, ...limits };
  if (format.name === 'csv') return parseCsv(source, all);
  if (format.name === 'rlist') return parseRlist(source, all);
  return parseJson(source, all);
}

/** Writes a list in a format as a stream; CSV first reads the items once for its header, so this is async. */
export async function writeList(format: ListFormat, list: ListSource): Promise<Readable> {
  if (format.name === 'csv') return writeCsv(list);
  if (format.name === 'rlist') return writeRlist(list);
  return writeJson(list);
}

export { batchesOf, collectList, DEFAULT_LIST_LIMITS, fromBatches } from './list-document.js';
export type { ItemBatches, ItemLocation, ListHeader, ListItem, ListLimits, ListSource, Metadata, ParsedList, ParsedListItem } from './list-document.js';
