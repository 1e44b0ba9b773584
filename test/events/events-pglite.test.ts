import { afterAll, beforeAll, expect, it } from 'vitest';
import { TEST_SERVICES, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { SseClient, dataOf } from '../helpers/sse-client.js';

/** The embedded database (one connection, role `all`): events are raised, published and delivered the same way. */
let rt: TestRuntime;
let client: SseClient | undefined;

beforeAll(async () => {
  rt = await startTestRuntime({ db: 'pglite', overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 5 } } } } } });
});
afterAll(async () => {
  client?.close();
  await rt.close();
});

it("delivers a task's status changes on PGlite, and resumes after Last-Event-ID", async () => {
  const token = await rt.token('ann', ['user']);
  client = await SseClient.open(`${rt.url}/v1/events`, token);
  const ann = rt.client.withToken(token);
  const created = await ann.post('/v1/services/work/tasks', { name: 'ev', lists: { input: { embedded: { listItems: [{ href: 'https://example.com/a.pdf' }] } } } });
  expect(created.status).toBe(200);
  const tid = created.body.tid as string;
  expect((await ann.post(`/v1/services/work/tasks/${tid}/action`, { action: 'start' })).status).toBe(204);
  await client.waitFor((e) => dataOf(e).tid === tid && dataOf(e).status === 'completed');
  const first = client.events[0]!;
  const again = await SseClient.open(`${rt.url}/v1/events`, token, { lastEventId: String(Number(first.id) - 1) });
  try {
    await again.waitFor((e) => dataOf(e).status === 'completed');
    expect(again.events.map((e) => e.id)).toEqual(client.events.map((e) => e.id));
  } finally {
    again.close();
  }
});
