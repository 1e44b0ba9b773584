import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../../../helpers/client.js';
import { TEST_SERVICES, eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { effectCounts } from './fixtures.js';

/**
 * The first task of the README, end to end over HTTP on both databases:
 * create with an input list, start, poll, read `cstats`; delete while
 * processing is 409. Every response is checked against the OpenAPI document.
 */
for (const driver of ['postgres', 'pglite'] as const) {
  describe(`a task from create to completed (${driver})`, () => {
    let rt: TestRuntime;
    let api: TestClient;
    beforeAll(async () => {
      rt = await startTestRuntime({ db: driver, overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 30 } } } } } });
      api = rt.client.withToken(await rt.token('alice', ['user']));
    }, 60_000);
    afterAll(async () => {
      await rt?.close();
    });

    it('create, start, poll, cstats; delete while processing is 409', async () => {
      const doc = (await api.post('/v1/services/store/repo', { name: 'letter.pdf', type: 'document', metadata: { copies: 2 } })).body.uuid as string;
      const created = await api.post('/v1/services/work/tasks', {
        name: 'first task',
        metadata: { printer: 'office' },
        lists: { input: { metadata: { batch: 7 }, embedded: { listItems: [
          { href: `/v1/services/store/repo/${doc}`, metadata: { name: 'letter' } },
          { href: 'https://example.org/flyer.pdf', metadata: { name: 'flyer', mock: { delayMs: 400 } } },
        ] } } },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const { tid, status, cstats } = created.body;
      expect(status).toBe('idle');
      expect(cstats).toEqual({});

      expect((await api.post(`/v1/services/work/tasks/${tid}/action`, { action: 'start' })).status).toBe(204);
      const busy = await api.get(`/v1/services/work/tasks/${tid}`);
      expect(busy.body.status).toBe('processing');
      const refused = await api.delete(`/v1/services/work/tasks/${tid}`);
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('TASK_ACTIVE');

      const done = await eventually(async () => {
        const res = await api.get(`/v1/services/work/tasks/${tid}`);
        return res.body.status === 'completed' ? res.body : undefined;
      });
      const entries = Object.entries(done.cstats as Record<string, { state: string; item: string; href: string | null; updated: string; message: string }>);
      expect(entries).toHaveLength(2);
      for (const [jobId, e] of entries) {
        expect(jobId).toBe(`mock.${tid}.${e.item}`);
        expect(e.state).toBe('done');
        expect(new Date(e.updated).toISOString()).toBe(e.updated);
      }
      const messages = entries.map(([, e]) => e.message).sort();
      expect(messages).toEqual([`simulated /v1/services/store/repo/${doc}`, 'simulated https://example.org/flyer.pdf'].sort());
      expect([...(await effectCounts(rt.services.db, 'work', tid)).values()]).toEqual([1, 1]);
      expect((await api.delete(`/v1/services/work/tasks/${tid}`)).status).toBe(204);
    });
  });
}
