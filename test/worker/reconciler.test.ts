import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropQueues, eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * Redis holds no durable state: commands queued while Redis is wiped still
 * finish once a worker starts, because the reconciler re-enqueues what the
 * database says is pending.
 */
let api: TestRuntime;
let source: http.Server;
let url: string;

beforeAll(async () => {
  source = http.createServer((_req, res) => res.end('imported bytes'));
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(source.address() as AddressInfo).port}/doc.txt`;
  // an API-only process: commands are stored and queued, nobody runs them yet
  api = await startTestRuntime({ parts: { api: true, workers: false } });
});
afterAll(async () => {
  source?.close();
  await api?.close();
});

describe('reconciler', () => {
  it('flush Redis while commands are queued, start a worker: every command still finishes', async () => {
    const client = api.client.withToken(await api.token('alice'));
    const folder = (await client.post('/v1/services/store/repo', { name: 'inbox', type: 'collection' })).body.uuid as string;
    const cids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const res = await client.post('/v1/services/store/repo/command', { command: 'import', parameters: { url, target: folder, name: `doc-${i}.txt` } });
      expect(res.status).toBe(200);
      cids.push(res.body.cid);
    }
    // the jobs are in Redis (the outbox relay moves them right after each commit)...
    await eventually(async () => ((await api.services.queue.depths()).commands.waiting === 10 ? true : undefined));
    // ...and now they are not
    expect(await dropQueues(api.prefix)).toBeGreaterThan(0);
    expect((await api.services.queue.depths()).commands.waiting).toBe(0);
    for (const cid of cids) expect((await client.get(`/v1/services/store/repo/command/${cid}`)).body.state).toBe('queued');

    const worker = await startTestRuntime({ parts: { api: false, workers: true }, shareWith: api });
    try {
      for (const cid of cids) {
        const done = await eventually(async () => {
          const res = await client.get(`/v1/services/store/repo/command/${cid}`);
          return res.body.state === 'success' ? res.body : undefined;
        });
        expect(done.result.size).toBe('imported bytes'.length);
      }
      const kids = await client.get(`/v1/services/store/repo/${folder}/children?limit=500`);
      expect(kids.body).toHaveLength(10); // exactly once each
    } finally {
      await worker.close();
    }
  });

  it('a command left "running" by a dead worker is picked up again and finishes once', async () => {
    const client = api.client.withToken(await api.token('alice'));
    const res = await client.post('/v1/services/store/repo/command', { command: 'import', parameters: { url, name: 'crashed.txt' } });
    const cid = res.body.cid as string;
    // simulate a worker that marked it running and died
    await api.services.db.query(`UPDATE commands SET state = 'running', attempts = 1 WHERE cid = $1`, [cid]);
    await dropQueues(api.prefix);
    const worker = await startTestRuntime({ parts: { api: false, workers: true }, shareWith: api });
    try {
      const done = await eventually(async () => {
        const s = await client.get(`/v1/services/store/repo/command/${cid}`);
        return s.body.state === 'success' ? s.body : undefined;
      });
      expect(done.result.href).toMatch(/\/v1\/services\/store\/repo\//);
      const root = await client.get('/v1/services/store/repo?scope=root&name=crashed.txt');
      expect(root.body.embedded.entries).toHaveLength(1);
    } finally {
      await worker.close();
    }
  });
});
