/*
 * Conditional request headers (RFC 9110 section 13) for content with a strong
 * ETag. Our ETags are `"<content_version>"`; a document without content has none.
 */

/** The entity tags of an If-Match / If-None-Match header, or '*'. */
function tagList(header: string): '*' | string[] {
  if (header.trim() === '*') return '*';
  return header.match(/(?:W\/)?"[^"]*"/g) ?? [];
}

/** If-Match: strong comparison, so a weak tag never matches; '*' needs current content. */
export function ifMatchHolds(header: string, etag: string | undefined): boolean {
  const tags = tagList(header);
  if (tags === '*') return etag !== undefined;
  return etag !== undefined && tags.includes(etag);
}

/** If-None-Match on a read: weak comparison; true means "answer 304". */
export function ifNoneMatchHits(header: string, etag: string | undefined): boolean {
  if (etag === undefined || header.trim() === '') return false;
  const tags = tagList(header);
  return tags === '*' || tags.some((t) => t.replace(/^W\//, '') === etag);
}

/**
 * If-Range: a Range applies only while the validator still names the current
 * content (strong comparison). A date cannot be checked (no Last-Modified is
 * sent), and a weak or stale tag does not match: the whole content is sent.
 */
export function ifRangeHolds(header: string, etag: string | undefined): boolean {
  if (header === '') return true;
  return etag !== undefined && header.trim() === etag;
}
