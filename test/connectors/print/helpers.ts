import { expect } from 'vitest';
import type { TestClient } from '../../helpers/client.js';
import { eventually } from '../../helpers/runtime.js';

/** The print service every test runtime has (config/default.yaml's `print`, its demo printer left out). */
export const PRINT = '/v1/services/print/tasks';

export interface CstatsEntry {
  state: string;
  item: string;
  href: string | null;
  updated: string;
  message: string | null;
}

/** A document of the store with `bytes` as content; answers its href. */
export async function storeDocument(api: TestClient, name: string, bytes: string | Buffer, mimeType = 'application/pdf'): Promise<string> {
  const created = await api.post('/v1/services/store/repo', { name, type: 'document' });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const put = await api.request('PUT', `/v1/services/store/repo/${created.body.uuid}/content`, { body: bytes, headers: { 'content-type': mimeType } });
  expect(put.status, JSON.stringify(put.body)).toBe(204);
  return `/v1/services/store/repo/${created.body.uuid}`;
}

/** A print task with these items (href and metadata), not started; answers its tid and its items' ids in order. */
export async function printTask(api: TestClient, name: string, items: { href: string; metadata?: Record<string, unknown> }[]): Promise<{ tid: string; items: string[] }> {
  const res = await api.post(PRINT, { name, lists: { input: { embedded: { listItems: items.map((i) => ({ href: i.href, metadata: i.metadata ?? {} })) } } } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const tid = res.body.tid as string;
  const list = await api.get(`${PRINT}/${tid}/input?embed=items`);
  expect(list.status, JSON.stringify(list.body)).toBe(200);
  return { tid, items: (list.body.embedded.listItems as { id: string; index: number }[]).sort((a, b) => a.index - b.index).map((i) => i.id) };
}

export async function act(api: TestClient, tid: string, action: string): Promise<void> {
  const res = await api.post(`${PRINT}/${tid}/action`, { action });
  expect(res.status, JSON.stringify(res.body)).toBe(204);
}

export async function getTask(api: TestClient, tid: string): Promise<{ status: string; cstats: Record<string, CstatsEntry> }> {
  const res = await api.get(`${PRINT}/${tid}`);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** The cstats entry of an item (by its id). */
export const entryOf = (cstats: Record<string, CstatsEntry>, item: string): CstatsEntry | undefined => Object.values(cstats).find((e) => e.item === item);

/** Waits until the item's cstats entry satisfies `ok`; answers it. */
export async function itemWhen(api: TestClient, tid: string, item: string, ok: (e: CstatsEntry) => boolean, timeoutMs = 30_000): Promise<CstatsEntry> {
  return eventually(async () => {
    const e = entryOf((await getTask(api, tid)).cstats, item);
    return e && ok(e) ? e : undefined;
  }, timeoutMs, 50);
}

export async function taskWhen(api: TestClient, tid: string, status: string, timeoutMs = 30_000) {
  return eventually(async () => {
    const t = await getTask(api, tid);
    return t.status === status ? t : undefined;
  }, timeoutMs, 50);
}

/** The print jobs of a task (from the job listing). */
export async function jobsOf(api: TestClient, tid: string): Promise<{ id: number; status: string; printer: string; fileName: string | null; task: { tid: string; item: string; run: number }; checkin: { type: string } }[]> {
  const res = await api.get('/v3/jobs/?$top=500');
  expect(res.status).toBe(200);
  return (res.body as { task: { tid: string } | null }[]).filter((j) => j.task?.tid === tid) as never;
}

/**
 * Records every state each item of a task shows in `cstats` while it runs
 * (a poll every 20 ms until `stop`): item id -> the states seen, in order,
 * each once per stretch.
 */
export function watchStates(api: TestClient, tid: string): { stop(): Promise<Map<string, string[]>> } {
  const seen = new Map<string, string[]>();
  let done = false;
  const loop = (async () => {
    while (!done) {
      const t = await getTask(api, tid);
      for (const e of Object.values(t.cstats)) {
        const states = seen.get(e.item) ?? [];
        if (states.at(-1) !== e.state) states.push(e.state);
        seen.set(e.item, states);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  return {
    async stop() {
      done = true;
      await loop;
      return seen;
    },
  };
}
