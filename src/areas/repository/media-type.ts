/**
 * Media types as stored in `mimeType`: `type/subtype` in lower case, each
 * part a restricted name of RFC 6838 (4.2): a letter or digit, then up to 126
 * of `A-Za-z0-9!#$&^_.+-`. Parameters (`; charset=...`) are not kept.
 */
export const MEDIA_TYPE = /^[a-z0-9][a-z0-9!#$&^_.+-]{0,126}\/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}$/i;

/** The media type of a Content-Type header value, or undefined when it is missing or not a media type. */
export function mediaTypeOf(header: string | undefined): string | undefined {
  const type = header?.split(';')[0]?.trim().toLowerCase();
  return type && MEDIA_TYPE.test(type) ? type : undefined;
}
