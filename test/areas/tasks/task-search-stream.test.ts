import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/app-error.js';
import { workPort } from '../../../src/runtime/work-port.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';

/**
 * Issue 20, item 3, on a real in-process runtime on PostgreSQL (a database
 * failure is injected into its own connection pool, which a separate
 * process would not allow): a task search's answer is streamed, so an error
 * after the first task cuts the response instead of answering an error body;
 * an error before it still answers one. And the runtime's own work (an
 * intake, a system principal) is not counted against `tasks.maxPerUser`, but
 * is bound by `tasks.maxItems`.
 */
let rt: TestRuntime;
let admin: TestClient;
const INTAKE = 'hotfolder:in';
const TASKS = 60;
const item = (n: number) => ({ href: `https://example.com/${n}.pdf`, metadata: { n } });

type Query = (text: string, params?: unknown[]) => Promise<unknown>;

/** Makes the `nth` and later reads of task rows by tid (a search's groups) fail, until the returned function is called. */
function failTaskReads(nth: number): () => void {
  const db = rt.services.db as unknown as { query: Query };
  const original = db.query;
  let seen = 0;
  db.query = function (this: unknown, text: string, params?: unknown[]) {
    if (/FROM tasks WHERE tid = ANY/.test(text) && ++seen >= nth) return Promise.reject(new Error('injected: the database went away'));
    return original.call(this, text, params);
  };
  return () => {
    db.query = original;
  };
}

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: {} } } },
      tasks: { maxPerUser: 2, maxItems: 3, searchEmbedItems: 2 },
    },
  });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
  const work = workPort(rt.services);
  for (let n = 0; n < TASKS; n++) {
    expect(await work.createTask({ service: 'work', tid: randomUUID(), name: `intake ${n}`, metadata: {}, items: [item(0), item(1), item(2)], creator: INTAKE, owner: null })).toBe(true);
  }
}, 60_000);
afterAll(() => rt?.close());

describe('task search stream', () => {
  it('stream: a database error after the first task cuts the answer (no complete array); the next search answers in full', async () => {
    const restore = failTaskReads(2); // the first group of 25 goes out, the second fails
    try {
      const res = await fetch(`${rt.url}/v1/tasks?embed=inputlist&limit=${TASKS}`, { headers: { authorization: `Bearer ${admin.token}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      await expect(res.text().then((t) => JSON.parse(t) as unknown)).rejects.toThrow();
    } finally {
      restore();
    }
    const again = await admin.get(`/v1/tasks?embed=inputlist&limit=${TASKS}`);
    expect(again.status).toBe(200);
    expect(again.body).toHaveLength(TASKS);
  });

  it('stream: a database error before the first task answers a normal error body', async () => {
    const restore = failTaskReads(1);
    try {
      const res = await admin.get('/v1/tasks?embed=inputlist');
      expect(res.status).toBe(500);
      expect(res.body.code).toBe('INTERNAL_ERROR');
    } finally {
      restore();
    }
  });

  it('embed cap: a search embeds tasks.searchEmbedItems items per list with `truncated`; one task\'s GET embeds them all', async () => {
    const res = await admin.get('/v1/services/work/tasks?embed=inputlist,output&limit=2');
    expect(res.status).toBe(200);
    for (const t of res.body) {
      expect(t.embedded.inputlist.embedded.listItems).toHaveLength(2);
      expect(t.embedded.inputlist.truncated).toEqual({ shown: 2, count: 3, href: `${t.href}/input?embed=items` });
      expect(t.embedded.output).not.toHaveProperty('truncated'); // empty: nothing cut
    }
    const one = await admin.get(`${res.body[0].href}?embed=inputlist`);
    expect(one.body.embedded.inputlist.embedded.listItems).toHaveLength(3);
    expect(one.body.embedded.inputlist).not.toHaveProperty('truncated');
  });
});

describe('limits: the runtime\'s own work', () => {
  it('limits: an intake (system principal) is not counted against tasks.maxPerUser but is bound by tasks.maxItems', async () => {
    // the intake made TASKS tasks, far past maxPerUser (2)
    expect((await admin.get(`/v1/tasks?inlineCount=true&creator=${encodeURIComponent(INTAKE)}`)).body.count).toBe(TASKS);
    const work = workPort(rt.services);
    const tooMany = work.createTask({ service: 'work', tid: randomUUID(), name: 'four', metadata: {}, items: [0, 1, 2, 3].map(item), creator: INTAKE, owner: null });
    await expect(tooMany).rejects.toSatisfy((e) => e instanceof AppError && e.code === 'LIST_TOO_LARGE');
    const csv = Readable.from(['item.href\n', [0, 1, 2, 3].map((n) => item(n).href).join('\n'), '\n']);
    const fromCsv = work.createTask({ service: 'work', tid: randomUUID(), name: 'csv', metadata: {}, list: { format: 'csv', body: csv }, creator: INTAKE, owner: null });
    await expect(fromCsv).rejects.toSatisfy((e) => e instanceof AppError && e.code === 'LIST_TOO_LARGE');
    expect((await admin.get('/v1/tasks?inlineCount=true')).body.count).toBe(TASKS);
  });
});
