import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { freePort, killAll, mintToken, startProcess, waitLog, waitReady } from '../helpers/process.js';
import { eventually } from '../helpers/runtime.js';
import { startRedisServer, type RedisServer } from './redis-server.js';

/**
 * The outbox's promise, with real processes: an `api` and a `worker` whose
 * Redis does not exist yet. Launches and uploads answer at once (their jobs
 * wait in the outbox), /readyz stays ready and names Redis down without hanging, and once a
 * Redis starts on that port every command and every preview completes.
 */
const schema = uniqueName('rd');
const prefix = uniqueName('rd');
let redis: RedisServer | undefined;
afterAll(async () => {
  killAll();
  await redis?.stop();
  await dropSchema(schema);
});

/** A request and how long its answer took. */
async function timed(url: string, init: RequestInit): Promise<{ status: number; body: Record<string, unknown>; ms: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) as Record<string, unknown> : {}, ms: performance.now() - t0 };
}

const STARTUP_MS = 120_000;

describe('Redis unreachable', () => {
  it('50 launches and 20 uploads answer within a second each; once Redis starts, all the work completes', async () => {
    const dataDir = await tempDir('wcr-rd-');
    const redisPort = await freePort();
    const cfg = path.join(dataDir, 'test.yaml');
    await writeFile(cfg, `database:\n  schema: ${schema}\nredis:\n  prefix: ${prefix}\ncommands:\n  importAllowPrivate: true\n`);
    const env = { DATA_DIR: dataDir, DATABASE_URL: TEST_DATABASE_URL, CONFIG: cfg, REDIS_URL: `redis://127.0.0.1:${redisPort}` };
    const api = await startProcess('api', env);
    const worker = await startProcess('worker', env);
    await waitLog(api, /API listening/, STARTUP_MS);
    await waitLog(worker, /workers running/, STARTUP_MS);
    const base = api.url!;

    // readiness tells the truth, quickly: ready (requests work), Redis named in the checks
    const ready = await timed(`${base}/readyz`, {});
    expect(ready.status).toBe(200);
    expect((ready.body.checks as Record<string, string>).redis).not.toBe('ok');
    expect((ready.body.checks as Record<string, string>).database).toBe('ok');
    expect(ready.ms).toBeLessThan(3000); // the Redis check is bounded at 2 s

    const token = await mintToken(dataDir, new URL(base).port);
    const json = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const repo = `${base}/v1/services/store/repo`;
    const png = await sharp({ create: { width: 64, height: 48, channels: 3, background: '#22aa66' } }).png().toBuffer();

    const docs: string[] = [];
    for (let i = 0; i < 20; i++) {
      const made = await timed(repo, { method: 'POST', headers: json, body: JSON.stringify({ name: `img-${i}.png`, type: 'document' }) });
      expect(made.status).toBe(200);
      docs.push(made.body.uuid as string);
    }
    const slow: string[] = [];
    const times: number[] = [];
    for (const uuid of docs) {
      const put = await timed(`${repo}/${uuid}/content`, { method: 'PUT', headers: { authorization: json.authorization, 'content-type': 'image/png' }, body: png });
      expect(put.status).toBe(204);
      times.push(put.ms);
      if (put.ms >= 1000) slow.push(`upload ${put.ms.toFixed(0)} ms`);
    }
    const cids: string[] = [];
    for (let i = 0; i < 50; i++) {
      const launched = await timed(`${repo}/command`, { method: 'POST', headers: json, body: JSON.stringify({ command: 'preview', parameters: { source: docs[i % docs.length] } }) });
      expect(launched.status).toBe(200);
      times.push(launched.ms);
      if (launched.ms >= 1000) slow.push(`launch ${launched.ms.toFixed(0)} ms`);
      cids.push(launched.body.cid as string);
    }
    console.log(`Redis down: 70 requests, slowest answer ${Math.max(...times).toFixed(0)} ms`);
    expect(slow).toEqual([]);

    // the jobs wait in the outbox, committed with their rows
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${schema}".outbox`);
      expect(rows[0]!.n).toBe(70);
    } finally {
      await db.end();
    }

    redis = await startRedisServer(redisPort);
    const t0 = performance.now();
    // BullMQ reconnects with a backoff of up to 20 s, and the machine is loaded: generous bounds
    const auth = { authorization: json.authorization };
    for (const cid of cids) {
      const done = await eventually(async () => {
        const st = await timed(`${repo}/command/${cid}`, { headers: auth });
        return st.body.state === 'success' || st.body.state === 'failure' ? st.body : undefined;
      }, 180_000, 250);
      expect(done.state).toBe('success');
    }
    for (const uuid of docs) {
      await eventually(async () => {
        const res = await fetch(`${repo}/${uuid}/preview`, { headers: auth });
        await res.arrayBuffer();
        return res.status === 200 ? true : undefined;
      }, 180_000, 250);
    }
    console.log(`all 50 commands and 20 previews done ${((performance.now() - t0) / 1000).toFixed(1)} s after Redis started`);
    await waitReady(base, 60_000);
    expect(api.child.exitCode).toBeNull();
    expect(worker.child.exitCode).toBeNull();
  }, 600_000);
});
