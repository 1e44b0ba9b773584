import { describe, expect, it } from 'vitest';
import { docRef, type DocRef } from '../../../../src/areas/lists/store/doc-href.js';

/** The grammar of `docRef` as a regular expression: the reference the hand-written parser is held to. */
const REPO_HREF = /^\/?(?:v1\/)?services\/([^/?#]+)\/repo\/([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\/?$/;

function docRefByExpression(href: string): DocRef | undefined {
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

/** `docRef` (by hand, for speed) gives the regular expression's answer for every href. */

const UUID = '0b1c2d3e-0000-4000-8000-00000000000a';

describe('docRef', () => {
  it('reads the documented forms and refuses the rest', () => {
    for (const prefix of ['/v1/services/', 'v1/services/', '/services/', 'services/']) {
      expect(docRef(`${prefix}store/repo/${UUID}`)).toEqual({ sid: 'store', uuid: UUID });
      expect(docRef(`${prefix}store/repo/${UUID}/`)).toEqual({ sid: 'store', uuid: UUID });
    }
    expect(docRef(`/v1/services/st%C3%B6re/repo/${UUID.toUpperCase()}`)).toEqual({ sid: 'störe', uuid: UUID });
    for (const bad of [
      `/v1/services/store/repo/${UUID}//`, `/v1/services/store/repo/${UUID}x`, `/v1/services//repo/${UUID}`,
      `/v1/services/a?b/repo/${UUID}`, `/v1/services/a#b/repo/${UUID}`, `/v1/services/%E0%A4%A/repo/${UUID}`,
      `//v1/services/store/repo/${UUID}`, `/v2/services/store/repo/${UUID}`, `/v1/services/store/repos/${UUID}`,
      `/v1/services/store/repo/${UUID.slice(0, 35)}`, `/v1/services/store/repo/${UUID.replace(/-/g, '')}`,
      `https://host/v1/services/store/repo/${UUID}`, `/v1/services/a/b/repo/${UUID}`, '', '/', 'services/',
      `/v1/services/${'s'.repeat(400)}/repo/${UUID}`,
    ]) expect(docRef(bad), bad).toBeUndefined();
  });

  it('agrees with the regular expression on 20,000 hrefs built from near-misses', () => {
    const parts = ['/', 'v1/', 'v2/', 'services/', 'service/', 'store', 'st%C3%B6re', '%E0%A4%A', 'a?b', 'a#b', '', 'repo/', '/repo/', 'repo',
      UUID, UUID.toUpperCase(), UUID.slice(1), `${UUID}0`, UUID.replace('-', 'g'), UUID.replace(/-/g, ''), '/', '//', 'x', '-', 'ü'];
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const templates = [
      () => `/v1/services/${parts[Math.floor(next() * parts.length)]}/repo/${parts[Math.floor(next() * parts.length)]}`,
      () => Array.from({ length: 1 + Math.floor(next() * 7) }, () => parts[Math.floor(next() * parts.length)]).join(''),
    ];
    let matched = 0;
    for (let n = 0; n < 20_000; n++) {
      const href = templates[n % 2]!();
      const expected = docRefByExpression(href);
      if (expected) matched++;
      expect(docRef(href), href).toEqual(expected);
    }
    expect(matched).toBeGreaterThan(100);
  });
});
