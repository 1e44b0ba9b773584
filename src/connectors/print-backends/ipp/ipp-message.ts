import ippEncoder, { type IppAttribute } from 'ipp-encoder';

/**
 * IPP messages (RFC 8010/8011) for the IPP backend: requests built from
 * plain attribute lists and responses read into a map, the binary format
 * left to `ipp-encoder` (a codec only: the bytes travel over a connection
 * the confinement rule opened, never one a library opens itself).
 */

const C = ippEncoder.CONSTANTS;

/** The operations the backend uses (RFC 8011 section 5.4.15). */
export const OP = {
  printJob: 0x02,
  cancelJob: 0x08,
  getJobAttributes: 0x09,
  getPrinterAttributes: 0x0b,
} as const;

/** job-state (RFC 8011 section 5.3.7). */
export const JOB_STATES: Readonly<Record<number, string>> = {
  3: 'pending', 4: 'pending-held', 5: 'processing', 6: 'processing-stopped', 7: 'canceled', 8: 'aborted', 9: 'completed',
};
export const JOB_CANCELED = 7;
export const JOB_ABORTED = 8;
export const JOB_COMPLETED = 9;

/** printer-state (RFC 8011 section 5.4.11). */
export const PRINTER_STATES: Readonly<Record<number, string>> = { 3: 'idle', 4: 'processing', 5: 'stopped' };

/** Status codes the backend tells apart (RFC 8011 section 4.1.6.3). */
export const STATUS = {
  clientErrorNotFound: 0x0406,
  clientErrorDocumentFormatNotSupported: 0x040a,
  serverErrorServiceUnavailable: 0x0502,
  serverErrorTemporaryError: 0x0505,
  serverErrorNotAcceptingJobs: 0x0506,
  serverErrorBusy: 0x0507,
} as const;

/** Statuses after which the printer took nothing and a later try may work: the job is `not-delivered`. */
export const RETRY_LATER: ReadonlySet<number> = new Set([
  STATUS.serverErrorBusy, STATUS.serverErrorServiceUnavailable, STATUS.serverErrorTemporaryError, STATUS.serverErrorNotAcceptingJobs,
]);

export const statusName = (code: number): string => ippEncoder.STATUS_CODES[code] ?? `status 0x${code.toString(16).padStart(4, '0')}`;
export const isSuccess = (code: number): boolean => code < 0x0100;

/** An attribute of a request: syntax, name and value(s). */
export type Attr = [syntax: 'charset' | 'language' | 'uri' | 'name' | 'text' | 'keyword' | 'mime' | 'integer' | 'boolean', name: string, value: string | number | boolean | readonly (string | number)[]];

const TAGS: Record<Attr[0], number> = {
  charset: C.CHARSET!, language: C.NATURAL_LANG!, uri: C.URI!, name: C.NAME_WITHOUT_LANG!, text: C.TEXT_WITHOUT_LANG!,
  keyword: C.KEYWORD!, mime: C.MIME_MEDIA_TYPE!, integer: C.INTEGER!, boolean: C.BOOLEAN!,
};

const toAttribute = ([syntax, name, value]: Attr): IppAttribute =>
  ({ tag: TAGS[syntax], name, value: Array.isArray(value) ? [...(value as unknown[])] : [value] });

/**
 * An IPP/1.1 request: `attributes-charset` and `attributes-natural-language`
 * first (as the protocol requires), then the operation's attributes, then
 * the job's (when any).
 */
export function encodeRequest(operation: number, requestId: number, operationAttrs: readonly Attr[], jobAttrs: readonly Attr[] = []): Buffer {
  const groups = [{
    tag: C.OPERATION_ATTRIBUTES_TAG!,
    attributes: [toAttribute(['charset', 'attributes-charset', 'utf-8']), toAttribute(['language', 'attributes-natural-language', 'en']), ...operationAttrs.map(toAttribute)],
  }];
  if (jobAttrs.length > 0) groups.push({ tag: C.JOB_ATTRIBUTES_TAG!, attributes: jobAttrs.map(toAttribute) });
  return ippEncoder.request.encode({ version: { major: 1, minor: 1 }, operationId: operation, requestId, groups });
}

/** A response: its status and every attribute of its groups by name (text values as strings). */
export interface IppResponse {
  status: number;
  attrs: ReadonlyMap<string, readonly unknown[]>;
}

export function decodeResponse(body: Buffer): IppResponse {
  if (body.length < 9) throw new Error(`not an IPP response (${body.length} bytes)`);
  const msg = ippEncoder.response.decode(body);
  const attrs = new Map<string, unknown[]>();
  for (const g of msg.groups) {
    for (const a of g.attributes) {
      // textWithLanguage and nameWithLanguage come as { lang, value }
      const values = a.value.map((v) => (v && typeof v === 'object' && 'value' in v ? (v as { value: unknown }).value : v));
      if (!attrs.has(a.name)) attrs.set(a.name, values);
    }
  }
  return { status: msg.statusCode ?? body.readUInt16BE(2), attrs };
}

/** The first value of an attribute, as a string (empty when absent). */
export const first = (r: IppResponse, name: string): string => {
  const v = r.attrs.get(name)?.[0];
  return v === undefined || v === null ? '' : String(v);
};

/** Every value of an attribute, as strings. */
export const all = (r: IppResponse, name: string): string[] => (r.attrs.get(name) ?? []).map(String);

/** The status and its message, for people: `server-error-busy (Currently printing another job.)`. */
export const describeStatus = (r: IppResponse): string => {
  const message = first(r, 'status-message');
  return message ? `${statusName(r.status)} (${message})` : statusName(r.status);
};
