import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Messages on the embedded database (PGlite): the same table, expiry and
 * trigger as on PostgreSQL. A file of its own: PGlite applies every
 * migration in WebAssembly at start, which takes well over half a minute on
 * a loaded machine (as test/runtime/shutdown.test.ts allows for).
 */
const PGLITE_START_MS = 120_000;

type Msg = { type: string; text: string };

describe('on the embedded database (PGlite)', () => {
  let lite: TestRuntime;
  beforeAll(async () => {
    lite = await startTestRuntime({ db: 'pglite', overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 0 } } } } } });
  }, PGLITE_START_MS);
  afterAll(async () => {
    await lite?.close();
  });

  it('the same table, expiry and trigger: create, list, a failed task tells its owner', async () => {
    const c = lite.client.withToken(await lite.token('alice', ['user']));
    expect((await c.post('/v1/messages', { text: 'embedded' })).status).toBe(200);
    const created = await c.post('/v1/services/work/tasks', { name: 'Lite', lists: { input: { embedded: { listItems: [{ href: 'https://d.example/a', metadata: { mock: { fail: true } } }] } } } });
    expect(created.status).toBe(200);
    expect((await c.post(`/v1/services/work/tasks/${created.body.tid}/action`, { action: 'start' })).status).toBe(204);
    const listed = await eventually(async () => {
      const res = await c.get('/v1/messages?sort=date');
      return res.status === 200 && res.body.length === 2 ? res.body as Msg[] : undefined;
    });
    expect(listed.map((m) => [m.type, m.text])).toEqual([['info', 'embedded'], ['error', 'Task "Lite" failed']]);
  });
});
