import pg from 'pg';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../helpers/env.js';
import { processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../helpers/process.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { eventually } from '../helpers/runtime.js';
import { SseClient, dataOf } from '../helpers/sse-client.js';

/**
 * The event stream across real processes: two `api` processes and one
 * `worker` on one PostgreSQL schema and one Redis, reached through a TCP
 * proxy that the test cuts to take Redis away. A task's status change in the
 * worker reaches a client of each API process; a client that reconnects with
 * Last-Event-ID gets exactly what it missed; users see only their own
 * objects' events; with Redis gone (and its stream lost) clients reconnect
 * and, once it is back, have missed nothing.
 */
let pe: ProcessEnv;
/** Redis as the API processes reach it, and as the worker does. */
let proxy: TcpProxy;
let workerProxy: TcpProxy;
let apis: TestProcess[];
let db: pg.Client;
const tokens: Record<string, string>[] = [];
const clients: SseClient[] = [];

async function sse(api: number, user: string, lastEventId?: string): Promise<SseClient> {
  const c = await SseClient.open(`${apis[api]!.url}/v1/events`, tokens[api]![user]!, { lastEventId });
  clients.push(c);
  expect(c.status).toBe(200);
  return c;
}

async function call(api: number, user: string, method: string, url: string, body?: unknown): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const res = await fetch(`${apis[api]!.url}${url}`, {
    method, headers: { authorization: `Bearer ${tokens[api]![user]}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** Creates and starts a one-item task of the demo service as `user`; returns its tid. */
async function startTask(api: number, user: string): Promise<string> {
  const created = await call(api, user, 'POST', '/v1/services/demo/tasks', { name: 'ev', lists: { input: { embedded: { listItems: [{ href: 'https://example.com/a.pdf' }] } } } });
  expect(created.status, JSON.stringify(created.body)).toBe(200);
  const tid = created.body.tid as string;
  expect((await call(api, user, 'POST', `/v1/services/demo/tasks/${tid}/action`, { action: 'start' })).status).toBe(204);
  return tid;
}

const completed = (tid: string) => (e: { data: string }) => e.data.includes(tid) && dataOf(e as never).status === 'completed';
const idsAfter = (c: SseClient, after: number) => c.events.map((e) => Number(e.id)).filter((id) => id > after);

/** The seqs of events about `user`'s tasks after `after`, as PostgreSQL has them. */
async function taskSeqs(user: string, after: number): Promise<number[]> {
  const { rows } = await db.query<{ seq: string }>(
    `SELECT seq::text FROM events WHERE type = 'task.updated' AND seq > $1 AND (creator = $2 OR owner = $2) ORDER BY seq`, [after, user]);
  return rows.map((r) => Number(r.seq));
}

beforeAll(async () => {
  proxy = await TcpProxy.start(TEST_REDIS_URL);
  workerProxy = await TcpProxy.start(TEST_REDIS_URL);
  pe = await processEnv({ events: { heartbeatMs: 1000 }, services: { demo: { type: 'mock', options: { tasks: { itemMs: 100 } } } } });
  const env = { ...pe.env, REDIS_URL: proxy.url(TEST_REDIS_URL) };
  apis = await Promise.all([startProcess('api', env), startProcess('api', env)]);
  const worker = await startProcess('worker', { ...env, REDIS_URL: workerProxy.url(TEST_REDIS_URL) });
  await Promise.all([...apis.map((a) => waitReady(a.url!)), waitLog(worker, /workers running/)]);
  for (const a of apis) {
    tokens.push({ ann: await pe.token(a.url!, 'ann', ['user']), bob: await pe.token(a.url!, 'bob', ['user']) });
  }
  db = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path="${pe.schema}"` });
  await db.connect();
}, 240_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await db?.end().catch(() => {});
  await pe?.cleanup();
  await proxy?.cut();
  await workerProxy?.cut();
});

/** Resolves once every event about `objects` has its seq recorded in PostgreSQL. */
async function published(objects: string[]): Promise<void> {
  await eventually(async () => {
    const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE object = ANY($1) AND seq IS NULL`, [objects]);
    return rows[0]!.n === 0 ? true : undefined;
  }, 30_000, 50);
}

async function dropStream(): Promise<void> {
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await redis.del(`${pe.prefix}:events`);
  } finally {
    redis.disconnect();
  }
}

describe('events across processes', () => {
  it("brings a task's change in the worker to a client of each API process, and to nobody else", async () => {
    const [annA, annB, bobA] = [await sse(0, 'ann'), await sse(1, 'ann'), await sse(0, 'bob')];
    const tid = await startTask(0, 'ann');
    const bobTid = await startTask(1, 'bob');
    for (const c of [annA, annB]) await c.waitFor(completed(tid), 60_000);
    await bobA.waitFor(completed(bobTid), 60_000);
    for (const c of [annA, annB]) {
      expect(c.of('task.updated').filter((e) => e.data.includes(tid)).map((e) => dataOf(e).status)).toEqual(['processing', 'completed']);
      expect(c.events.some((e) => e.data.includes(bobTid))).toBe(false);
    }
    expect(bobA.events.some((e) => e.data.includes(tid))).toBe(false);
    // both processes deliver the same events of the task, under the same ids (only the task's: the worker raises
    // events of its own at any time, e.g. the demo printer's state, which one client may see before the other connected)
    const ofTask = (c: typeof annA) => c.events.filter((e) => e.data.includes(tid)).map((e) => [e.id, e.data]);
    expect(ofTask(annB)).toEqual(ofTask(annA));
  }, 120_000);

  it('gives a client that reconnects with Last-Event-ID exactly what it missed', async () => {
    const annA = await sse(0, 'ann');
    const first = await startTask(0, 'ann');
    await annA.waitFor(completed(first), 60_000);
    const annB = await sse(1, 'ann');
    const mark = annA.lastId!;
    annB.close();
    const missed = [await startTask(0, 'ann'), await startTask(1, 'ann')];
    for (const tid of missed) await annA.waitFor(completed(tid), 60_000);
    const back = await sse(1, 'ann', mark);
    const expected = annA.events.filter((e) => Number(e.id) > Number(mark));
    await eventually(async () => (back.events.length >= expected.length ? true : undefined), 30_000, 50);
    expect(back.events.map((e) => [e.id, e.event, e.data])).toEqual(expected.map((e) => [e.id, e.event, e.data]));
  }, 120_000);

  it('loses nothing when Redis goes away and comes back without its stream', async () => {
    const annA = await sse(0, 'ann');
    const warm = await startTask(0, 'ann');
    await annA.waitFor(completed(warm), 60_000);
    const mark = Number(annA.lastId);
    let annB = await sse(1, 'ann', String(mark));

    await Promise.all([proxy.cut(), workerProxy.cut()]);
    // Redis restarted empty, as far as the events go (the queues' keys are left: their loss is the reconciler's test)
    await dropStream();
    // requests still answer; the starts commit their events, which wait for Redis
    const during = [await startTask(0, 'ann'), await startTask(1, 'ann')];
    // a client reconnecting meanwhile is served what PostgreSQL has
    const seen = annB.lastId;
    annB.close();
    annB = await sse(1, 'ann', seen ?? String(mark));
    await Promise.all([proxy.restore(), workerProxy.restore()]);

    for (const tid of during) for (const c of [annA, annB]) await c.waitFor(completed(tid), 90_000);
    // a client may get an event from the stream before the publisher's commit records its seq
    await published(during);
    const expected = await taskSeqs('ann', mark);
    expect(expected.length).toBeGreaterThanOrEqual(4);
    for (const c of [annA, annB]) expect(c.of('task.updated').map((e) => Number(e.id)).filter((id) => id > mark)).toEqual(expected);
    expect(idsAfter(annA, mark)).toEqual(idsAfter(annB, mark));
  }, 180_000);

  it('brings events Redis lost before an API process read them from PostgreSQL, to live and reconnecting clients', async () => {
    const annA = await sse(0, 'ann');
    const warm = await startTask(0, 'ann');
    await annA.waitFor(completed(warm), 60_000);
    const mark = Number(annA.lastId);
    let annB = await sse(1, 'ann', String(mark));

    // the API processes lose Redis; the worker keeps it, runs the tasks and publishes their events
    await proxy.cut();
    const during = [await startTask(0, 'ann'), await startTask(1, 'ann')];
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM events WHERE object = ANY($1) AND seq IS NOT NULL AND payload->>'status' = 'completed'`, [during]);
      return rows[0]!.n === during.length ? true : undefined;
    }, 90_000, 100);
    // ... and Redis restarts without them before the API processes could read them
    await dropStream();
    expect(annA.events.some((e) => during.some((tid) => e.data.includes(tid)))).toBe(false);
    // a client reconnecting now is served from PostgreSQL
    annB.close();
    annB = await sse(1, 'ann', String(mark));
    for (const tid of during) await annB.waitFor(completed(tid), 30_000);
    // the live client gets them once its process reaches Redis again
    await proxy.restore();
    for (const tid of during) await annA.waitFor(completed(tid), 60_000);

    const expected = await taskSeqs('ann', mark);
    expect(expected.length).toBeGreaterThanOrEqual(4);
    for (const c of [annA, annB]) expect(c.of('task.updated').map((e) => Number(e.id)).filter((id) => id > mark)).toEqual(expected);
    // and the stream goes on
    const after = await startTask(1, 'ann');
    for (const c of [annA, annB]) await c.waitFor(completed(after), 60_000);
  }, 180_000);
});
