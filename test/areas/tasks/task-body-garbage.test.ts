import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';

/**
 * Large task bodies over HTTP: 100 MB of garbage as CSV and as RList is a 400
 * with nothing created and the server's memory flat; a valid CSV of 20,000
 * rows streams into one task.
 */

const MB = 1024 * 1024;
let rt: TestRuntime;
let ann: TestClient;
const base = '/v1/services/work/tasks';

/** `total` bytes: `head`, then pseudo-random bytes (xorshift), produced as they are read. */
function garbage(total: number, head = ''): Readable {
  let sent = 0;
  let s = 0x9e3779b9;
  return new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const chunk = Buffer.alloc(Math.min(64 * 1024, total - sent));
      let from = 0;
      if (sent === 0) from = chunk.write(head);
      for (let i = from; i < chunk.length; i++) {
        s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0;
        chunk[i] = s & 0xff;
      }
      sent += chunk.length;
      this.push(chunk);
    },
  });
}

const rows = async () => Number((await rt.services.db.query<{ n: string }>('SELECT (SELECT count(*) FROM tasks) + (SELECT count(*) FROM list_items) AS n')).rows[0]!.n);

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { lists: { maxItems: 100_000 }, services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: {} } } } } });
  ann = rt.client.withToken(await rt.token('ann', ['user']));
});
afterAll(() => rt.close());

describe('large task bodies', () => {
  it('refuses 100 MB of garbage (CSV, RList) with 400, creates nothing, keeps memory flat', async () => {
    const before = await rows();
    const rss = process.memoryUsage().rss;
    for (const [type, head, code] of [
      ['text/csv', 'item.href,item.metadata.name\n', 'INVALID_CSV'],
      ['application/rli', '[DOCUMENT_1]\r\n', 'INVALID_RLIST'],
    ] as const) {
      const res = await ann.request('POST', base, { body: garbage(100 * MB, head) as unknown as RequestInit['body'], headers: { 'content-type': type } });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.code).toBe(code);
    }
    expect(process.memoryUsage().rss - rss).toBeLessThan(100 * MB);
    expect(await rows()).toBe(before);
    expect((await ann.post(base, { name: 'still here' })).status).toBe(200);
  }, 60_000);

  it('streams 20,000 CSV rows into one task', async () => {
    const n = 20_000;
    let i = -1;
    const body = new Readable({
      read() {
        if (i >= n) return void this.push(null);
        const lines: string[] = [];
        if (i < 0) lines.push('list.name,item.href,item.metadata.name,item.metadata.copies');
        for (let k = 0; k < 1000 && i < n; k++, i++) if (i >= 0) lines.push(`${i === 0 ? 'big' : ''},https://example.com/${i}.pdf,doc ${i},${i % 3}`);
        if (i < 0) i = 0;
        this.push(`${lines.join('\n')}\n`);
      },
    });
    const res = await ann.request('POST', base, { body: body as unknown as RequestInit['body'], headers: { 'content-type': 'text/csv' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const list = await ann.get(`${base}/${res.body.tid}/input`);
    expect(list.body.count).toBe(n);
    const last = await rt.services.db.query<{ href: string; position: number }>(
      `SELECT href, position FROM list_items i JOIN lists l ON l.lid = i.lid WHERE l.tid = $1 AND l.kind = 'input' ORDER BY position DESC LIMIT 1`, [res.body.tid]);
    expect(last.rows[0]).toEqual({ href: `https://example.com/${n - 1}.pdf`, position: n - 1 });
  }, 60_000);
});
