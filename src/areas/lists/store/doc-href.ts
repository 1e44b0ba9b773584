import { AppError } from '../../../errors/app-error.js';
import type { ItemLocation } from '../../../formats/list-document.js';

/**
 * The repository document an item's href names, when it names one:
 * `/v1/services/<sid>/repo/<uuid>` or the same without `/v1` (or without the
 * leading slash). Stored beside the href (`doc_sid`, `doc_uuid`) so "is this
 * document used by a task" and `inputDocument` searches use an index instead
 * of parsing hrefs. Anything else (an http(s) URL, a path) names no document.
 * The grammar, as a regular expression (test/areas/lists/store/doc-href.test.ts holds
 * `docRef` to it): `^/?(?:v1/)?services/([^/?#]+)/repo/(<uuid>)/?$`, the sid
 * percent-decoded, hrefs over 400 characters refused.
 */

export interface DocRef {
  sid: string;
  uuid: string;
}

/** 1 at the char codes of hex digits (either case), 0 elsewhere: one load per character. */
const HEX_DIGIT = new Uint8Array(65536);
for (const c of '0123456789abcdefABCDEF') HEX_DIGIT[c.charCodeAt(0)] = 1;

/**
 * True when `s` holds 8-4-4-4-12 hex digits from `at` (a uuid's text, either
 * case). The dashes first, then a table per digit: about 90 ns where range
 * comparisons per character took 200 (every row of an import is checked).
 */
function isUuidAt(s: string, at: number): boolean {
  if (s.charCodeAt(at + 8) !== 45 || s.charCodeAt(at + 13) !== 45 || s.charCodeAt(at + 18) !== 45 || s.charCodeAt(at + 23) !== 45) return false;
  for (let k = 0; k < 36; k++) {
    if (k === 8 || k === 13 || k === 18 || k === 23) continue;
    // past the end charCodeAt is NaN: no entry, so false
    if (HEX_DIGIT[s.charCodeAt(at + k)] !== 1) return false;
  }
  return true;
}

/**
 * The grammar above by hand (a large import checks every row's href; this is
 * several times faster than the expression, and test/areas/lists/store/doc-href.test.ts
 * holds the two to the same answers).
 */
export function docRef(href: string): DocRef | undefined {
  if (href.length > 400) return undefined;
  let i = href.charCodeAt(0) === 47 ? 1 : 0; // optional leading /
  if (href.startsWith('v1/', i)) i += 3;
  if (!href.startsWith('services/', i)) return undefined;
  i += 9;
  const slash = href.indexOf('/', i);
  if (slash <= i) return undefined;
  const rawSid = href.slice(i, slash);
  if (rawSid.includes('?') || rawSid.includes('#')) return undefined;
  if (!href.startsWith('/repo/', slash)) return undefined;
  const at = slash + 6;
  const rest = href.length - at - 36;
  if (rest !== 0 && !(rest === 1 && href.charCodeAt(href.length - 1) === 47)) return undefined;
  if (!isUuidAt(href, at)) return undefined;
  let sid = rawSid;
  if (rawSid.includes('%')) {
    try {
      sid = decodeURIComponent(rawSid);
    } catch {
      return undefined;
    }
  }
  return { sid, uuid: href.slice(at, at + 36).toLowerCase() };
}

/**
 * 400 unless `href` is a repository document path or an http(s) URL; `at`
 * names where it came from. Returns the document it names (null for a URL).
 */
export function checkHref(href: string, at?: ItemLocation): DocRef | null {
  const doc = docRef(href);
  if (doc) return doc;
  let url: URL | undefined;
  try {
    url = new URL(href);
  } catch {
    url = undefined;
  }
  if (url && (url.protocol === 'http:' || url.protocol === 'https:')) return null;
  const where = at === undefined ? {} : 'row' in at ? { ...at, column: 'item.href' } : 'section' in at ? { ...at, key: 'HREF' } : { ...at, field: 'href' };
  throw new AppError('INVALID_HREF', `"${href.slice(0, 200)}" is neither a repository document (/v1/services/<sid>/repo/<uuid>) nor an http(s) URL`, where);
}
