import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { freePort, killAll, mintToken, startProcess, waitLog, waitReady } from '../helpers/process.js';
import { dropQueues, eventually } from '../helpers/runtime.js';

/** The real entrypoint as a process: SIGTERM lets an upload in flight finish, then everything closes in order. */
const schema = uniqueName('sd');
const prefix = uniqueName('sd');
afterAll(async () => {
  killAll();
  await dropSchema(schema);
  await dropQueues(prefix);
});

/** Queue prefixes of the processes started without a CONFIG: each embedded database its own (a prefix is bound to one database). */
const ownPrefixes: string[] = [];
afterAll(async () => {
  for (const p of ownPrefixes) await dropQueues(p);
});

const start = async (role: 'all' | 'api' | 'worker', dataDir: string, port: number, extraEnv: Record<string, string> = {}) => {
  if (extraEnv.CONFIG === undefined) {
    const own = uniqueName('sdp');
    ownPrefixes.push(own);
    const cfg = path.join(dataDir, `prefix-${own}.yaml`);
    await writeFile(cfg, `redis:\n  prefix: ${own}\n`);
    extraEnv = { ...extraEnv, CONFIG: cfg };
  }
  return startProcess(role, { DATA_DIR: dataDir, PORT: String(port), ...extraEnv });
};

/** Three processes start at once under a loaded test run: starting can be slow, so the waits are generous. */
const STARTUP_MS = 120_000;

describe('graceful shutdown', () => {
  it('SIGTERM during an upload: the upload completes, the process stops in order and exits 0', async () => {
    const dataDir = await tempDir('wcr-sd-');
    const port = await freePort();
    // DATABASE_URL with its own schema through the CONFIG file route is not needed: the embedded database is fine here.
    const { child, logs, exited } = await start('all', dataDir, port);
    const base = `http://127.0.0.1:${port}`;
    await waitReady(base, STARTUP_MS);
    const token = await mintToken(dataDir, port);
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const created = await (await fetch(`${base}/v1/services/store/repo`, { method: 'POST', headers: auth, body: JSON.stringify({ name: 'slow.bin', type: 'document' }) })).json() as { uuid: string };

    // a slow upload: 20 chunks over ~1 s; SIGTERM arrives in the middle
    const status = new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/v1/services/store/repo/${created.uuid}/content`, {
        method: 'PUT', headers: { authorization: auth.authorization, 'content-type': 'application/octet-stream', 'content-length': String(20 * 65536) },
      }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      let i = 0;
      const tick = setInterval(() => {
        req.write(Buffer.alloc(65536, i));
        if (++i === 5) child.kill('SIGTERM');
        if (i === 20) {
          clearInterval(tick);
          req.end();
        }
      }, 50);
    });
    expect(await status).toBe(204);
    expect(await exited).toBe(0);
    const messages = logs.map((l) => { try { return (JSON.parse(l) as { msg: string }).msg; } catch { return l; } });
    const order = ['signal received', 'shutting down', 'stopped'].map((m) => messages.indexOf(m));
    expect(order.every((i) => i >= 0)).toBe(true);
    expect([...order].sort((a, b) => a - b)).toEqual(order);
  }, 300_000);

  it('fault: SIGTERM during a request on a keep-alive connection: once answered, its idle socket is closed and the process exits within seconds', async () => {
    const dataDir = await tempDir('wcr-sd-');
    const port = await freePort();
    const { child, exited } = await start('all', dataDir, port);
    const base = `http://127.0.0.1:${port}`;
    await waitReady(base, STARTUP_MS);
    const token = await mintToken(dataDir, port);
    const agent = new http.Agent({ keepAlive: true, keepAliveMsecs: 60_000 });
    const created = await (await fetch(`${base}/v1/services/store/repo`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ka.bin', type: 'document' }),
    })).json() as { uuid: string };
    const answered = new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/v1/services/store/repo/${created.uuid}/content`, {
        agent, method: 'PUT', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/octet-stream', 'content-length': String(10 * 65536) },
      }, (res) => {
        res.resume();
        res.on('end', () => resolve(Date.now()));
      });
      req.on('error', reject);
      let i = 0;
      const tick = setInterval(() => {
        req.write(Buffer.alloc(65536, i));
        if (++i === 3) child.kill('SIGTERM');
        if (i === 10) {
          clearInterval(tick);
          req.end();
        }
      }, 50);
    });
    const at = await answered;
    // the default shutdown budget is 30 s: before, the idle keep-alive socket held the server open for half of it
    expect(await exited).toBe(0);
    expect(Date.now() - at).toBeLessThan(5000);
    agent.destroy();
  }, 300_000);

  it('roles api and worker as separate processes over PostgreSQL; a bad role configuration is refused', async () => {
    const dataDir = await tempDir('wcr-sd-');
    const port = await freePort();
    const cfg = path.join(dataDir, 'test.yaml');
    await writeFile(cfg, `database:\n  schema: ${schema}\nredis:\n  prefix: ${prefix}\n`);
    const env = { DATABASE_URL: TEST_DATABASE_URL, CONFIG: cfg };
    const api = await start('api', dataDir, port, env);
    const worker = await start('worker', dataDir, port, env);
    try {
      await waitReady(`http://127.0.0.1:${port}`, STARTUP_MS);
      await waitLog(worker, /workers running/, STARTUP_MS);
      // readiness can answer before the log line reaches this process's pipe
      await waitLog(api, /API listening/, STARTUP_MS);
      expect(worker.logs.join('\n')).not.toContain('API listening');
    } finally {
      const codes = await Promise.all([api, worker].map(({ child }) => new Promise<number | null>((r) => {
        if (child.exitCode !== null) return r(child.exitCode); // already gone (start failed)
        child.on('exit', (c) => r(c));
        child.kill('SIGTERM');
      })));
      expect(codes, [...api.logs, ...worker.logs].join('\n').slice(-3000)).toEqual([0, 0]);
    }
    // the embedded database is single-process: role api without DATABASE_URL is refused at start
    const refused = await start('api', dataDir, port);
    const code = await refused.exited;
    expect(code).toBe(78);
    expect(refused.logs.join('\n')).toMatch(/embedded database/);
  }, 300_000);

  it('Redis unreachable: the process still starts (readyz says why), and SIGTERM still stops it', async () => {
    const dataDir = await tempDir('wcr-sd-');
    const port = await freePort();
    const cfg = path.join(dataDir, 'fast.yaml');
    await writeFile(cfg, 'server:\n  shutdownTimeoutMs: 4000\n');
    const { child, logs, exited } = await start('all', dataDir, port, { REDIS_URL: 'redis://127.0.0.1:1', CONFIG: cfg });
    const body = await eventually(async () => {
      const res = await fetch(`http://127.0.0.1:${port}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      const json = res ? await res.json() as { checks?: { redis?: string; database?: string } } : undefined;
      return res?.status === 200 && json?.checks?.redis ? json : undefined;
    }, STARTUP_MS, 250);
    expect(body.checks!.database).toBe('ok');
    expect(body.checks!.redis).not.toBe('ok');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(logs.filter((l) => l.includes('Redis connection lost')).length).toBeLessThan(10);
  }, 300_000);
});
