import { describe, expect, it } from 'vitest';
import { jobListWriter } from '../../../../src/areas/print/jobs/present.js';

/**
 * present.ts jobListWriter on pages written here as listJobs writes them (jsonb
 * and timestamps between \x01 marks), against the text JSON.stringify gives. The
 * database tests (submit.test.ts, jobs-api.test.ts) compare real pages with GET.
 */
const M = '\x01';
/** A page of rows with these timestamp texts (PostgreSQL's, in UTC) and the same page as JSON.stringify writes it. */
function page(times: string[], name = 'job'): { marked: string; expected: string } {
  const marked: string[] = [];
  const expected: string[] = [];
  times.forEach((t, i) => {
    const iso = new Date(`${t.replace(' ', 'T')}Z`).toISOString();
    const stages = i % 3 === 0 ? `${M}s[{"size": 7, "stage": "preprocessed", "sha256": "bb", "created": "2024-01-01T00:00:00.000Z", "mimeType": "application/pdf"}]${M}` : '[]';
    marked.push(`{"id":${i},"name":${JSON.stringify(`${name} ${i}`)},"checkin":${M}c{"type": "api", "n": ${i % 4}}${M},"task":${i % 2 ? `${M}c{"sid": "s", "tid": "t ${i}"}${M}` : 'null'},`
      + `"created":"${M}t${t}${M}","finished":${i % 5 ? `"${M}t${t}${M}"` : 'null'},"stages":${stages},"retention":{"seconds":60,"deleteAfter":"${M}t${t}${M}"}}`);
    expected.push(JSON.stringify({ id: i, name: `${name} ${i}`, checkin: { type: 'api', n: i % 4 }, task: i % 2 ? { sid: 's', tid: `t ${i}` } : null, created: iso,
      finished: i % 5 ? iso : null, stages: i % 3 === 0 ? [{ stage: 'preprocessed', size: 7, mimeType: 'application/pdf', created: '2024-01-01T00:00:00.000Z' }] : [],
      retention: { seconds: 60, deleteAfter: iso } }));
  });
  return { marked: `[${marked.join(',')}]`, expected: `[${expected.join(',')}]` };
}
const fractions = ['2026-11-23 04:00:00.5', '2026-11-23 04:00:00.07', '2026-11-23 04:00:00.123', '2026-11-23 04:00:00.1239', '2026-11-23 04:00:00.99999', '1999-12-31 23:59:59.999999'];

describe('jobListWriter', () => {
  it('writes a page as JSON.stringify of the presented jobs, whatever the timestamps', () => {
    const { marked, expected } = page(Array.from({ length: 60 }, (_, i) => fractions[i % fractions.length]!));
    const write = jobListWriter();
    expect(write(marked)).toBe(expected);
    // the remembered compact jsonb and a second page through the same writer
    expect(write(marked)).toBe(expected);
    const whole = `[{"created":"${M}t2024-02-29 23:59:59${M}","updated":"${M}t2024-02-29 23:59:58.5${M}"}]`;
    expect(jobListWriter()(whole)).toBe('[{"created":"2024-02-29T23:59:59.000Z","updated":"2024-02-29T23:59:58.500Z"}]');
    const few = page([...fractions, '2024-02-29 23:59:59', '0001-01-01 00:00:00', ...fractions]);
    expect(jobListWriter()(few.marked)).toBe(few.expected);
    const many = page(Array.from({ length: 40 }, (_, i) => `2024-02-29 23:59:${String(i).padStart(2, '0')}`));
    expect(jobListWriter()(many.marked)).toBe(many.expected);
  });

  it('writes a page with other characters than ASCII', () => {
    const { marked, expected } = page(fractions, 'naïve ✓ "q" \\ \n');
    expect(jobListWriter()(marked)).toBe(expected);
    const { marked: latin1, expected: latin1Expected } = page(fractions, 'é');
    expect(jobListWriter()(latin1)).toBe(latin1Expected);
  });

  it('wraps the page for $inlinecount and passes a page without marks as it came', () => {
    const { marked, expected } = page(fractions);
    expect(jobListWriter()(marked, 42)).toBe(`{"results":${expected},"totalCount":42}`);
    expect(jobListWriter()('[{"id":1}]')).toBe('[{"id":1}]');
    expect(jobListWriter()('[]', 0)).toBe('{"results":[],"totalCount":0}');
  });
});
