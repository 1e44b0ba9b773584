import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../helpers/env.js';
import { TEST_SERVICES, eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { expectError, type TestClient } from '../helpers/client.js';
import { SseClient, dataOf, type SseEvent } from '../helpers/sse-client.js';

/**
 * GET /v1/events in one process (API, workers and publisher), against real
 * PostgreSQL and Redis: events from committed changes only, per-user
 * visibility, exact resumes with Last-Event-ID (from Redis, from PostgreSQL
 * when Redis lost the stream, `events.lost` when neither has it), a client
 * that does not read is cut while another keeps receiving, heartbeats.
 */
let rt: TestRuntime;
let tokens: Record<'root' | 'ann' | 'bob', string>;
let ann: TestClient;
let bob: TestClient;
const base = '/v1/services/work/tasks';
const open: SseClient[] = [];

async function sse(who: keyof typeof tokens, opts: { lastEventId?: string; paused?: boolean; query?: string } = {}): Promise<SseClient> {
  const c = await SseClient.open(`${rt.url}/v1/events${opts.query ?? ''}`, tokens[who], opts);
  open.push(c);
  expect(c.status).toBe(200);
  expect(c.headers['content-type']).toMatch(/^text\/event-stream/);
  return c;
}

async function task(client: TestClient, items = 1): Promise<string> {
  const listItems = Array.from({ length: items }, (_, i) => ({ href: `https://example.com/${i}.pdf` }));
  const res = await client.post(base, { name: 'ev', lists: { input: { embedded: { listItems } } } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body.tid as string;
}

const start = async (client: TestClient, tid: string) => expect((await client.post(`${base}/${tid}/action`, { action: 'start' })).status).toBe(204);
const taskEvents = (c: SseClient, tid: string) => c.of('task.updated').filter((e) => dataOf(e).tid === tid).map((e) => dataOf(e).status);
const ids = (events: SseEvent[]) => events.map((e) => Number(e.id));

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 5 } } } },
      events: { heartbeatMs: 200, clientBufferBytes: 1024 * 1024 },
    },
  });
  tokens = { root: await rt.token('root', ['admin']), ann: await rt.token('ann', ['user']), bob: await rt.token('bob', ['user']) };
  ann = rt.client.withToken(tokens.ann);
  bob = rt.client.withToken(tokens.bob);
});
afterAll(async () => {
  for (const c of open) c.close();
  await rt.close();
});

describe('GET /v1/events', () => {
  it("delivers a task's status changes to its owner and to admins, never to another user", async () => {
    const annStream = await sse('ann');
    const bobStream = await sse('bob');
    const rootStream = await sse('root');
    const tid = await task(ann);
    const bobTid = await task(bob);
    await start(ann, tid);
    await start(bob, bobTid);
    await annStream.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
    await bobStream.waitFor((e) => dataOf(e).tid === bobTid && dataOf(e).status === 'completed');
    await rootStream.waitFor((e) => dataOf(e).tid === bobTid && dataOf(e).status === 'completed');
    await rootStream.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
    expect(taskEvents(annStream, tid)).toEqual(['processing', 'completed']);
    expect(dataOf(annStream.of('task.updated')[0]!)).toEqual({ tid, sid: 'work', status: 'processing', href: `${base}/${tid}` });
    expect(annStream.events.some((e) => e.data.includes(bobTid))).toBe(false);
    expect(bobStream.events.some((e) => e.data.includes(tid))).toBe(false);
    // ids ascend (the stream's order); admins see both users' events
    for (const s of [annStream, bobStream, rootStream]) expect(ids(s.events)).toEqual([...ids(s.events)].sort((a, b) => a - b));
    expect(taskEvents(rootStream, bobTid)).toEqual(['processing', 'completed']);
  });

  it('panel.create and message.created reach their user only, committed with the panel and the message', async () => {
    const annStream = await sse('ann');
    const bobStream = await sse('bob');
    const rootStream = await sse('root');
    const panel = await ann.post('/v1/panels', { name: `ev-panel-${Date.now()}`, createpanel: '1' });
    expect(panel.status, JSON.stringify(panel.body)).toBe(200);
    const quiet = await ann.post('/v1/panels', { name: `ev-quiet-${Date.now()}` });
    expect(quiet.status).toBe(200);
    const message = await ann.post('/v1/messages', { text: 'to ann' });
    expect(message.status).toBe(200);
    await annStream.waitFor((e) => e.event === 'panel.create' && dataOf(e).pid === panel.body.pid);
    await annStream.waitFor((e) => e.event === 'message.created' && dataOf(e).uuid === message.body.uuid);
    expect(dataOf(annStream.of('panel.create').find((e) => dataOf(e).pid === panel.body.pid)!)).toEqual(panel.body);
    expect(dataOf(annStream.of('message.created').find((e) => dataOf(e).uuid === message.body.uuid)!)).toMatchObject({ uuid: message.body.uuid, text: 'to ann', type: 'info' });
    // a panel created without createpanel raises nothing; nobody else hears ann's
    expect(annStream.of('panel.create').some((e) => dataOf(e).pid === quiet.body.pid)).toBe(false);
    // a later event of bob's own, so anything of ann's would have reached bob and root before it
    const mine = await bob.post('/v1/messages', { text: 'to bob' });
    await bobStream.waitFor((e) => e.event === 'message.created' && dataOf(e).uuid === mine.body.uuid);
    for (const other of [bobStream, rootStream]) {
      expect(other.events.some((e) => e.data.includes(panel.body.pid) || e.data.includes(message.body.uuid))).toBe(false);
    }
  });

  it('sends heartbeats as comment lines', async () => {
    const c = await sse('ann');
    await eventually(async () => (c.comments >= 2 ? true : undefined), 10_000, 50);
  });

  it('resumes after Last-Event-ID with exactly the events missed, then live ones', async () => {
    const witness = await sse('ann');
    const first = await task(ann);
    await start(ann, first);
    const seen = await witness.waitFor((e) => dataOf(e).tid === first && dataOf(e).status === 'completed');
    const left = await sse('ann', { lastEventId: seen.id });
    left.close();
    // missed while away
    const missed = [await task(ann), await task(ann)];
    for (const tid of missed) await start(ann, tid);
    for (const tid of missed) await witness.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
    const back = await sse('ann', { lastEventId: seen.id });
    const after = witness.events.filter((e) => Number(e.id) > Number(seen.id));
    await eventually(async () => (back.events.length >= after.length ? true : undefined));
    expect(back.events.map((e) => [e.id, e.event, e.data])).toEqual(after.map((e) => [e.id, e.event, e.data]));
    // and then live, nothing twice
    const live = await task(ann);
    await start(ann, live);
    await back.waitFor((e) => dataOf(e).tid === live && dataOf(e).status === 'completed');
    expect(new Set(ids(back.events)).size).toBe(back.events.length);
    // the query parameter works as the header does (browsers cannot set headers on EventSource)
    const byQuery = await sse('ann', { query: `?lastEventId=${seen.id}` });
    await byQuery.waitFor((e) => dataOf(e).tid === live && dataOf(e).status === 'completed');
    expect(byQuery.events.map((e) => e.id)).toEqual(back.events.map((e) => e.id));
  });

  it('resumes from PostgreSQL when Redis lost the stream, and says so with events.lost when nothing has it', async () => {
    const witness = await sse('ann');
    const tid = await task(ann);
    await start(ann, tid);
    const done = await witness.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
    const processing = witness.events.find((e) => dataOf(e).tid === tid && dataOf(e).status === 'processing')!;
    const redis = new Redis(TEST_REDIS_URL);
    try {
      await redis.del(`${rt.prefix}:events`);
    } finally {
      redis.disconnect();
    }
    const resumed = await sse('ann', { lastEventId: String(Number(processing.id) - 1) });
    await resumed.waitFor((e) => e.id === done.id);
    expect(resumed.events.map((e) => e.id)).toEqual(witness.events.filter((e) => Number(e.id) >= Number(processing.id)).map((e) => e.id));
    // housekeeping removed them too: the client is told, and the stream goes on from the head
    await rt.services.db.query('DELETE FROM events WHERE seq <= $1', [Number(processing.id)]);
    const lost = await sse('ann', { lastEventId: String(Number(processing.id) - 1) });
    const notice = await lost.waitFor((e) => e.event === 'events.lost');
    expect(Number(notice.id)).toBeGreaterThanOrEqual(Number(done.id));
    expect(dataOf(notice)).toMatchObject({ reason: expect.any(String), resumesAfter: Number(notice.id) });
    // an id from the future (another installation): told too
    const future = await sse('ann', { lastEventId: '999999999' });
    expect((await future.waitFor((e) => e.event === 'events.lost')).id).toBe(notice.id);
  });

  it('raises nothing for a change that rolled back', async () => {
    const c = await sse('ann');
    const tid = await task(ann);
    await rt.services.db.transaction(async (tx) => {
      await tx.query(`UPDATE tasks SET status = 'failed' WHERE tid = $1`, [tid]);
      throw new Error('roll back');
    }).catch(() => undefined);
    await rt.services.db.query(`UPDATE tasks SET status = 'aborted' WHERE tid = $1`, [tid]);
    await c.waitFor((e) => dataOf(e).tid === tid);
    expect(taskEvents(c, tid)).toEqual(['aborted']);
    const { rows } = await rt.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM events WHERE object = $1`, [tid]);
    expect(rows[0]!.n).toBe(1);
  });

  it('filters by type and refuses bad input', async () => {
    const typed = await sse('ann', { query: '?types=command.updated' });
    const tid = await task(ann);
    await start(ann, tid);
    const witness = await sse('ann');
    const other = await task(ann);
    await start(ann, other);
    await witness.waitFor((e) => dataOf(e).tid === other && dataOf(e).status === 'completed');
    expect(typed.of('task.updated')).toEqual([]);
    expectError(await ann.get('/v1/events?types=task.updated,nope'), 400, 'INVALID_QUERY');
    expectError(await ann.get('/v1/events?since=3'), 400, 'INVALID_QUERY');
    expectError(await ann.get('/v1/events?lastEventId=-1'), 400, 'INVALID_LAST_EVENT_ID');
    expectError(await ann.get('/v1/events', { headers: { 'last-event-id': '../x' } }), 400, 'INVALID_LAST_EVENT_ID');
    expectError(await ann.get('/v1/events', { headers: { 'last-event-id': '1'.repeat(40) } }), 400, 'INVALID_LAST_EVENT_ID');
    expectError(await ann.get('/v1/events', { token: undefined }), 401);
    expectError(await ann.get('/v1/events', { token: 'not-a-token' }), 401);
  });

  it('cuts a client that does not read while another keeps receiving', async () => {
    const slow = await sse('bob', { paused: true });
    const fast = await sse('ann');
    // 600 events of 40 KB each to every reader of printers (24 MB: past the kernel's socket buffers and the 1 MiB allowed)
    await rt.services.db.query(
      `SELECT raise_event('printer.updated', 'printers', 'p' || g, jsonb_build_object('name', 'p' || g, 'pad', repeat('x', 40000))) FROM generate_series(1, 600) g`);
    const t0 = Date.now();
    await eventually(async () => (fast.of('printer.updated').length === 600 ? true : undefined), 60_000, 50).catch((err) => {
      throw new Error(`fast got ${fast.bytes} bytes, ${fast.of("printer.updated").length} of ${fast.events.length} (${fast.events.slice(-2).map((e) => e.event + e.data.slice(0, 80)).join(" | ")}) closed ${fast.closed}, slow closed ${slow.closed}, ${Date.now() - t0} ms: ${err}`);
    });
    // the slow one was cut: once it reads, it finds its stream ended short
    slow.resume();
    await eventually(async () => (slow.closed ? true : undefined), 20_000, 50);
    expect(slow.of('printer.updated').length).toBeLessThan(600);
    expect(fast.closed).toBe(false);
    // the fast one is still served
    const tid = await task(ann);
    await start(ann, tid);
    await fast.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
  }, 120_000);
});
