import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createList } from '../../../src/areas/lists/store/list-store.js';
import { insertItemsFrom } from '../../../src/areas/lists/store/bulk/insert-items.js';
import { insertTask } from '../../../src/areas/tasks/store/task-store.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { openPostgres } from '../../../src/storage/driver/postgres.js';
import { checkContract } from '../../helpers/contract.js';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';
import { peakRssDuring } from '../../helpers/rss.js';

/**
 * Issue 20, item 3, against a real server process (role `all`, default
 * configuration): `GET /v1/tasks?embed=inputlist&limit=500` over many large
 * tasks. The answer is streamed and each embedded list is cut at
 * `tasks.searchEmbedItems` (default 100), so the API's RSS stays bounded
 * however many items the tasks hold. The tasks are seeded straight into the
 * process's schema through the stores (binary COPY of the items).
 */

const MB = 1024 * 1024;
/** 200 tasks of 2,000 items: 400,000 items, about 150 MB of JSON when every item is embedded. */
const TASKS = 200;
const ITEMS = 2000;
/** What one search may add to the API's RSS (the streamed answer holds a few tasks at a time). */
const BOUND = 100 * MB;

let pe: ProcessEnv;
let proc: TestProcess;
let db: Database;
let token: string;

async function* items(task: number): AsyncGenerator<{ href: string; metadata: Record<string, unknown> }> {
  for (let i = 0; i < ITEMS; i++) {
    yield { href: `https://example.com/t${task}/doc-${i}.pdf`, metadata: { name: `document ${i} of task ${task}`, copies: i % 3, note: 'n'.repeat(60) } };
  }
}

/** One task of the demo service with its two lists and ITEMS input items, as `TaskLists.create` writes them. */
async function seedTask(n: number): Promise<void> {
  await db.transaction(async (tx) => {
    const tid = randomUUID();
    await insertTask(tx, {
      tid, sid: 'demo', name: `big ${n}`, type: null, metadata: { n }, creator: 'alice', owner: null,
      principal: { user: 'alice', identities: ['alice'], roles: ['admin'], ownOnly: false },
    });
    const base = { tid, creator: 'alice', owner: null };
    const input = await createList(tx, { ...base, kind: 'input' });
    await createList(tx, { ...base, kind: 'output' });
    await insertItemsFrom(tx, input.lid, items(n));
  });
}

async function search(path: string, contract = false): Promise<{ status: number; text: string }> {
  const res = await fetch(`${proc.url}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(120_000) });
  const text = await res.text();
  if (contract) checkContract('GET', new URL(path, proc.url).pathname, { status: res.status, headers: res.headers, contentType: res.headers.get('content-type') ?? '', body: JSON.parse(text) });
  return { status: res.status, text };
}

beforeAll(async () => {
  pe = await processEnv({});
  proc = await startProcess('all', pe.env);
  await waitReady(proc.url!);
  token = await pe.token(proc.url!);
  db = await openPostgres({ url: TEST_DATABASE_URL, schema: pe.schema, poolSize: 2 });
  for (let n = 0; n < TASKS; n += 2) await Promise.all([seedTask(n), seedTask(n + 1)]);
  // warm the route up once (module loading, prepared plans) with a small page
  expect((await search('/v1/tasks?embed=inputlist&limit=1')).status).toBe(200);
}, 120_000);

afterAll(async () => {
  await db?.close();
  await pe?.cleanup();
});

describe('task search over large tasks', () => {
  it('memory: GET /v1/tasks?embed=inputlist&limit=500 over 200 tasks of 2,000 items keeps the API process under +100 MB RSS', async () => {
    const { before, peak, result } = await peakRssDuring(proc.child.pid!, () => search('/v1/tasks?embed=inputlist&limit=500'));
    console.log(`one search: RSS before ${(before / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB, answer ${(result.text.length / MB).toFixed(1)} MB`);
    expect(result.status).toBe(200);
    expect((JSON.parse(result.text) as unknown[]).length).toBe(TASKS);
    expect(peak - before).toBeLessThan(BOUND);
  }, 60_000);

  it('memory: three such searches at once stay under +150 MB RSS together', async () => {
    const { before, peak, result } = await peakRssDuring(proc.child.pid!, () =>
      Promise.all([0, 1, 2].map(() => search('/v1/tasks?embed=inputlist&limit=500'))));
    console.log(`three searches: RSS before ${(before / MB).toFixed(0)} MB, peak ${(peak / MB).toFixed(0)} MB`);
    for (const r of result) expect(r.status).toBe(200);
    expect(peak - before).toBeLessThan(BOUND * 1.5);
  }, 60_000);

  it('embed cap: each embedded input list holds the first 100 items and says it was cut (count, link to the full list)', async () => {
    const res = await search('/v1/services/demo/tasks?embed=inputlist&limit=3', true);
    expect(res.status).toBe(200);
    const tasks = JSON.parse(res.text) as { href: string; embedded: { inputlist: Record<string, any> } }[]; // eslint-disable-line @typescript-eslint/no-explicit-any
    expect(tasks).toHaveLength(3);
    for (const t of tasks) {
      const list = t.embedded.inputlist;
      expect(list.count).toBe(ITEMS);
      expect(list.embedded.listItems).toHaveLength(100);
      expect(list.embedded.listItems.map((i: { index: number }) => i.index)).toEqual([...Array(100).keys()]);
      expect(list.truncated).toEqual({ shown: 100, count: ITEMS, href: `${t.href}/input?embed=items` });
    }
    // the full list is where the link says
    const full = await search(tasks[0]!.embedded.inputlist.truncated.href, true);
    expect(full.status).toBe(200);
    expect((JSON.parse(full.text) as { embedded: { listItems: unknown[] } }).embedded.listItems).toHaveLength(ITEMS);
  }, 60_000);
});
