import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkContract } from '../../helpers/contract.js';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';

/**
 * 100 MB bodies posted as text/csv to a real server process: the answer is a
 * 4xx as soon as the parser knows (with `Connection: close`, so the rest is
 * never read), nothing is created, and the process's memory stays flat.
 */

const MB = 1024 * 1024;
const BODY_BYTES = 100 * MB;
let pe: ProcessEnv;
let proc: TestProcess;
let token: string;

async function rssOf(pid: number): Promise<{ rss: number; hwm: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)![1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/** A body of `total` bytes: `head`, then `chunk` repeated (never held whole). */
function body(head: string, chunk: Buffer, total: number): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent === 0 && head !== '') {
        sent += head.length;
        this.push(head);
        return;
      }
      if (sent >= total) return void this.push(null);
      sent += chunk.length;
      this.push(chunk);
    },
  });
}

/**
 * Posts a streamed body and resolves with the answer once the whole body was
 * sent (the server answers early and drains the rest) or the server closed
 * the connection.
 */
function postStream(path: string, source: Readable): Promise<{ status: number; body: unknown; contentType: string; headers: Headers; sent: number }> {
  const url = new URL(path, proc.url);
  let sent = 0;
  source.on('data', (c: Buffer) => (sent += c.length));
  return new Promise((resolve, reject) => {
    let answer: { status: number; body: unknown; contentType: string; headers: Headers } | undefined;
    let through = false;
    const done = () => answer && through && resolve({ ...answer, sent });
    const req = http.request(url, { method: 'POST', agent: false, headers: { authorization: `Bearer ${token}`, 'content-type': 'text/csv' } }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const headers = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
        answer = { status: res.statusCode!, body: JSON.parse(Buffer.concat(parts).toString('utf8')), contentType: res.headers['content-type'] ?? '', headers };
        done();
      });
      res.on('error', reject);
    });
    // all sent, or the connection gone (closed after the answer)
    for (const event of ['finish', 'close']) {
      req.on(event, () => {
        through = true;
        done();
      });
    }
    // the server may close the connection once it has answered: that is not the test's failure
    req.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EPIPE' && code !== 'ECONNRESET') return reject(err);
      through = true;
      done();
    });
    source.pipe(req);
  });
}

async function counts(): Promise<{ lists: number; items: number }> {
  const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await c.connect();
  try {
    const { rows } = await c.query(`SELECT (SELECT count(*)::int FROM "${pe.schema}".lists) AS lists, (SELECT count(*)::int FROM "${pe.schema}".list_items) AS items`);
    return rows[0] as { lists: number; items: number };
  } finally {
    await c.end();
  }
}

beforeAll(async () => {
  pe = await processEnv({ lists: { maxItems: 10_000 } });
  proc = await startProcess('all', pe.env);
  await waitReady(proc.url!);
  token = await pe.token(proc.url!);
}, 180_000);
afterAll(() => pe.cleanup());

describe('100 MB bodies of garbage as text/csv', () => {
  const cases: [string, string, Buffer, number, string][] = [
    ['random bytes', '', randomBytes(MB), 400, 'INVALID_CSV'],
    ['an endless row', 'item.href,item.metadata.x\r\nhttps://d.example/a,', Buffer.alloc(MB, 'x'), 400, 'INVALID_CSV'],
    ['rows past the item limit', 'item.href,item.metadata.x\r\n', Buffer.from('https://d.example/doc/garbage,zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz\r\n'.repeat(20_000)), 413, 'LIST_TOO_LARGE'],
  ];
  it.each(cases)('%s: a clear 4xx, nothing created, memory flat', async (_, head, chunk, status, code) => {
    const before = await rssOf(proc.child.pid!);
    let peak = before.rss;
    const sampler = setInterval(() => {
      void rssOf(proc.child.pid!).then((m) => (peak = Math.max(peak, m.rss)), () => undefined);
    }, 50);
    try {
      const res = await postStream('/v1/lists', body(head, chunk, BODY_BYTES));
      checkContract('POST', '/v1/lists', res);
      expect(res.status).toBe(status);
      expect((res.body as { code: string }).code).toBe(code);
      // the server answers as soon as it knows and closes the connection rather than read the rest
      expect(res.headers.get('connection')).toBe('close');
    } finally {
      clearInterval(sampler);
    }
    // the server is still there and answers
    const ready = await fetch(`${proc.url}/readyz`);
    expect(ready.status).toBe(200);
    const after = await rssOf(proc.child.pid!);
    expect(await counts()).toEqual({ lists: 0, items: 0 });
    const growth = Math.max(peak, after.rss) - before.rss;
    console.log(`${_}: RSS before ${(before.rss / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB, after ${(after.rss / MB).toFixed(0)} MB`);
    expect(growth).toBeLessThan(60 * MB);
  }, 120_000);
});
