/**
 * The repository document an item's href names, when it names one:
 * `/v1/services/<sid>/repo/<uuid>` or the same without `/v1` (or without the
 * leading slash). Stored beside the href (`doc_sid`, `doc_uuid`) so "is this
 * document used by a task" and `inputDocument` searches use an index instead
 * of parsing hrefs. Anything else (an http(s) URL, a path) names no document.
 */
const REPO_HREF = /^\/?(?:v1\/)?services\/([^/?#]+)\/repo\/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\/?$/;

export interface DocRef {
  sid: string;
  uuid: string;
}

export function docRef(href: string): DocRef | undefined {
  if (href.length > 400) return undefined;
  const m = REPO_HREF.exec(href);
  if (!m) return undefined;
  let sid: string;
  try {
    sid = decodeURIComponent(m[1]!);
  } catch {
    return undefined;
  }
  return { sid, uuid: m[2]!.toLowerCase() };
}
