import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { itemReporter } from '../../../src/areas/tasks/actions/item-reporter.js';
import { failChunk } from '../../../src/areas/tasks/store/task-store.js';
import { m026TaskProgress } from '../../../src/storage/migrations/026-task-progress.js';
import type { TestClient } from '../../helpers/client.js';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * A task's `progress { total, done, failed }` (issue 24, item 6), kept with
 * the task by the statements that write item states and input changes, over
 * HTTP against real PostgreSQL and Redis with the mock connector: creation,
 * start, item reports (done, failed, handed off and reported late), abandon,
 * appends and removals, re-runs, and the migration's backfill.
 */
let rt: TestRuntime;
let api: TestClient;
const base = '/v1/services/work/tasks';

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 0 } } } }, queues: { taskItemsPerJob: 3 } },
  });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
}, 60_000);
afterAll(async () => {
  await rt?.close();
});

type Progress = { total: number; done: number; failed: number };
const item = (i: number, meta: Record<string, unknown> = {}) => ({ href: `https://example.org/p-${i}.pdf`, metadata: meta });

async function create(items: { href: string; metadata: Record<string, unknown> }[]): Promise<{ tid: string; progress: Progress }> {
  const res = await api.post(base, { name: 'progress', lists: { input: { metadata: {}, embedded: { listItems: items } } } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}
const read = async (tid: string) => {
  const res = await api.get(`${base}/${tid}`);
  expect(res.status).toBe(200);
  return res.body as { status: string; progress: Progress };
};
const start = async (tid: string) => expect((await api.post(`${base}/${tid}/action`, { action: 'start' })).status).toBe(204);
const settled = (tid: string) => eventually(async () => {
  const t = await read(tid);
  return ['completed', 'failed'].includes(t.status) ? t : undefined;
}, 20_000, 50);

describe('task progress', () => {
  it('counts the input at creation, starts at 0 done, and follows the items to the end', async () => {
    const t = await create([item(0), item(1), item(2, { mock: { fail: 'no paper' } }), item(3), item(4, { mock: { fail: true } })]);
    expect(t.progress).toEqual({ total: 5, done: 0, failed: 0 });
    await start(t.tid);
    const end = await settled(t.tid);
    expect(end.status).toBe('failed');
    expect(end.progress).toEqual({ total: 5, done: 3, failed: 2 });
    // the search answers carry it too
    const search = await api.get(`${base}?name=progress&limit=500`);
    expect(search.body.find((x: { tid: string }) => x.tid === t.tid).progress).toEqual({ total: 5, done: 3, failed: 2 });
  });

  it('appends and removals change the total; a re-run queues failed items again and keeps the done ones', async () => {
    const t = await create([item(0), item(1, { mock: { fail: true } }), item(2)]);
    await start(t.tid);
    expect((await settled(t.tid)).progress).toEqual({ total: 3, done: 2, failed: 1 });

    const appended = await api.post(`${base}/${t.tid}/input`, item(3));
    expect(appended.status).toBe(200);
    expect((await read(t.tid)).progress).toEqual({ total: 4, done: 2, failed: 1 });

    // removing a done item: it no longer counts as done
    const items = (await api.get(`${base}/${t.tid}/input?embed=items`)).body.embedded.listItems as { id: string; metadata: Record<string, unknown> }[];
    expect((await api.delete(`${base}/${t.tid}/input/${items[0]!.id}`)).status).toBe(204);
    expect((await read(t.tid)).progress).toEqual({ total: 3, done: 1, failed: 1 });

    // the failing item fixed, a re-run: failed back to 0, then every item done
    expect((await api.put(`${base}/${t.tid}/input/${items[1]!.id}`, { href: 'https://example.org/fixed.pdf', metadata: {} })).status).toBe(200);
    await start(t.tid);
    const end = await settled(t.tid);
    expect(end.status).toBe('completed');
    expect(end.progress).toEqual({ total: 3, done: 3, failed: 0 });
  });

  it('a handed-off item counts when its late final report comes; a pause and an abort count nothing', async () => {
    const t = await create([item(0), item(1, { mock: { handOff: true } })]);
    await start(t.tid);
    // item 0 done, item 1 handed off (marked once runItem returned without a final report)
    const handedOff = await eventually(async () => {
      const { rows } = await rt.services.db.query<{ item: string }>(`SELECT item FROM task_items WHERE tid = $1 AND handed_off`, [t.tid]);
      return rows[0];
    }, 20_000, 50);
    const rows = [handedOff];
    expect(await read(t.tid)).toMatchObject({ status: 'processing', progress: { total: 2, done: 1, failed: 0 } });
    const reporter = itemReporter(rt.services.db);
    await reporter.report(t.tid, { item: rows[0]!.item, jobId: 'late', state: 'failed', outcome: 'failed', message: 'jammed' });
    await reporter.report(t.tid, { item: rows[0]!.item, jobId: 'late', state: 'done', outcome: 'done' }); // refused: final already
    expect(await read(t.tid)).toMatchObject({ status: 'failed', progress: { total: 2, done: 1, failed: 1 } });

    const slow = await create([item(0, { mock: { delayMs: 60_000 } }), item(1, { mock: { delayMs: 60_000 } })]);
    await start(slow.tid);
    expect((await api.post(`${base}/${slow.tid}/action`, { action: 'pause' })).status).toBe(204);
    expect((await read(slow.tid)).progress).toEqual({ total: 2, done: 0, failed: 0 });
    expect((await api.post(`${base}/${slow.tid}/action`, { action: 'abort' })).status).toBe(204);
    expect(await read(slow.tid)).toMatchObject({ status: 'aborted', progress: { total: 2, done: 0, failed: 0 } });
  });

  it('an abandoned job fails its open items into the count', async () => {
    const t = await create([item(0), item(1)]);
    // a run whose job is gone (no worker takes it: its rows written as a start writes them, without the job)
    const db = rt.services.db;
    await db.query(`UPDATE tasks SET status = 'processing', run = 1 WHERE tid = $1`, [t.tid]);
    await db.query(
      `INSERT INTO task_items (tid, item, run, chunk, outcome, state)
       SELECT $1, li.id, 1, 0, 'queued', 'queued' FROM lists l JOIN list_items li ON li.lid = l.lid WHERE l.tid = $1 AND l.kind = 'input'`, [t.tid]);
    // what `abandon` runs for a job past its re-creations: the chunk's open items fail
    expect(await db.transaction((tx) => failChunk(tx, t.tid, 1, 0, 'gone'))).toBe(2);
    expect((await read(t.tid)).progress).toEqual({ total: 2, done: 0, failed: 2 });
    expect(await db.transaction((tx) => failChunk(tx, t.tid, 1, 0, 'gone'))).toBe(0); // nothing open: nothing counted twice
    expect((await read(t.tid)).progress).toEqual({ total: 2, done: 0, failed: 2 });
  });

  it('the migration counts existing tasks from their rows', async () => {
    const t = await create([item(0), item(1), item(2, { mock: { fail: true } })]);
    await start(t.tid);
    await settled(t.tid);
    const db = rt.services.db;
    await db.query('UPDATE tasks SET progress_total = 0, progress_done = 0, progress_failed = 0 WHERE tid = $1', [t.tid]);
    // the backfill's UPDATE alone (the columns exist already)
    await db.query(m026TaskProgress.sql.slice(m026TaskProgress.sql.indexOf('UPDATE tasks k')));
    expect((await read(t.tid)).progress).toEqual({ total: 3, done: 2, failed: 1 });
  });
});
