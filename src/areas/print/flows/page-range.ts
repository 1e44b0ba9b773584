/**
 * Page ranges as print dialogs write them: `1-3,5`, `7-` (to the end).
 * Pages count from 1. Parsed once at validation, applied at run time
 * against the real page count.
 */
export interface PageSpan {
  from: number;
  /** `null`: to the last page. */
  to: number | null;
}

const PART = /^(\d{1,6})(?:\s*-\s*(\d{1,6})?)?$/;

/** The spans of a range, or a plain problem for the flow's 400. */
export function parsePageRange(text: string): { spans: PageSpan[] } | { problem: string } {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length > 100) return { problem: 'at most 100 parts' };
  const spans: PageSpan[] = [];
  for (const part of parts) {
    const m = PART.exec(part);
    if (!m) return { problem: `"${part.slice(0, 40)}" is not a page or a range like 1-3 or 7-` };
    const from = Number(m[1]);
    const to = m[2] === undefined ? (part.includes('-') ? null : from) : Number(m[2]);
    if (from < 1) return { problem: 'pages count from 1' };
    if (to !== null && to < from) return { problem: `"${part}" ends before it starts` };
    spans.push({ from, to });
  }
  return { spans };
}

/** Zero-based indexes of the pages a range selects in a document of `count` pages, in range order, each once. */
export function selectPages(spans: readonly PageSpan[], count: number): number[] {
  const seen = new Set<number>();
  const out: number[] = [];
  for (const s of spans) {
    const last = Math.min(s.to ?? count, count);
    for (let p = s.from; p <= last; p++) {
      if (!seen.has(p)) {
        seen.add(p);
        out.push(p - 1);
      }
    }
  }
  return out;
}
