import { spawn } from 'node:child_process';
import { Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logging/logger.js';
import { deadWorkers, holdLiveness, WORKER_IDENTITY_PREFIX } from '../../src/worker/liveness-store.js';
import { takeoverPass } from '../../src/worker/takeover.js';
import { dropSchema, openTestPglite, openTestPostgres, type TestDatabase } from '../helpers/databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { eventually, startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The liveness witness (a session-level advisory lock per worker process on
 * a connection of its own) and the detection query (`deadWorkers`): a real
 * process holding its identity is alive while running and while stopped
 * (SIGSTOP), and dead once killed (SIGKILL), without waiting for any
 * timeout. Then the takeover pass: a run of a worker proven dead is queued
 * again; a run of a live one is left alone.
 */
const log = createLogger('silent');

describe('liveness witness', () => {
  let t: TestDatabase;
  beforeAll(async () => {
    t = await openTestPostgres({ migrate: false, poolSize: 2 });
  });
  afterAll(async () => {
    await t?.drop();
  });

  it('holds its identity until released; unknown identities read dead', async () => {
    const w = (await holdLiveness(t.db, log))!;
    expect(w.identity.startsWith(WORKER_IDENTITY_PREFIX)).toBe(true);
    expect(w.held()).toBe(true);
    const other = `${WORKER_IDENTITY_PREFIX}never-held`;
    expect(await deadWorkers(t.db, [w.identity, other])).toEqual([other]);
    expect(await deadWorkers(t.db, [])).toEqual([]);
    await w.release();
    expect(await deadWorkers(t.db, [w.identity])).toEqual([w.identity]);
  });

  it('a process holding its identity is alive while stopped (SIGSTOP) and dead once killed (SIGKILL)', async () => {
    const schema = uniqueName('lh');
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/worker/liveness-holder.ts', TEST_DATABASE_URL, schema], { stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    try {
      let out = '';
      child.stdout.on('data', (c: Buffer) => (out += c.toString()));
      const identity = await eventually(async () => /identity (\S+)/.exec(out)?.[1], 60_000, 50);
      expect(await deadWorkers(t.db, [identity])).toEqual([]);
      child.kill('SIGSTOP');
      // stopped for a while: its connection stays open, so does its lock
      for (let i = 0; i < 5; i++) {
        await new Promise((r) => setTimeout(r, 500));
        expect(await deadWorkers(t.db, [identity])).toEqual([]);
      }
      child.kill('SIGCONT');
      expect(await deadWorkers(t.db, [identity])).toEqual([]);
      child.kill('SIGKILL');
      await exited;
      // the kernel closes the killed process's socket; the server ends the session and frees its lock
      await eventually(async () => ((await deadWorkers(t.db, [identity])).length === 1 ? true : undefined), 10_000, 50);
    } finally {
      child.kill('SIGKILL');
      await dropSchema(schema);
    }
  }, 120_000);

  it('is not held on PGlite (one process: nothing to take over)', async () => {
    const p = await openTestPglite({ migrate: false });
    try {
      expect(await holdLiveness(p.db, log)).toBeUndefined();
    } finally {
      await p.drop();
    }
  });
});

describe('takeover pass', () => {
  // an API-only runtime: its queue and database, no workers of its own; the dispatch runs are the test's workers
  let rt: TestRuntime;
  beforeAll(async () => {
    rt = await startTestRuntime({ parts: { api: true, workers: false } });
  });
  afterAll(async () => {
    await rt?.close();
  });

  /** A BullMQ worker named `name` that starts the printer's dispatch job and hangs in it until aborted. */
  async function hangingRun(name: string, printer: string): Promise<Worker> {
    const started = new Promise<void>((resolve) => {
      const w = new Worker('print', async (_job, _token, signal) => {
        resolve();
        await new Promise((r) => signal?.addEventListener('abort', r));
      }, { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix: rt.prefix, name, concurrency: 1, lockDuration: 30_000 });
      workers.push(w);
    });
    await rt.services.queue.enqueue('print.dispatch', { printer });
    await started;
    return workers.at(-1)!;
  }
  const workers: Worker[] = [];
  afterAll(async () => {
    for (const w of workers) await w.close(true);
  });

  it('queues again a run whose worker has held no liveness lock for the confirmation time, never one whose worker does', async () => {
    const s = rt.services;
    const live = (await holdLiveness(s.db, log))!;
    try {
      const dead = `${WORKER_IDENTITY_PREFIX}dead-one`;
      await hangingRun(live.identity, 'p-live');
      await hangingRun(dead, 'p-dead');
      await hangingRun('another-kind', 'p-unnamed'); // not this runtime's identity: never judged
      const running = await s.queue.running(['print.dispatch']);
      expect(running.map((r) => [r.id, r.worker, r.token !== undefined]).sort()).toEqual([
        ['print.dispatch.p-dead', dead, true],
        ['print.dispatch.p-live', live.identity, true],
        ['print.dispatch.p-unnamed', 'another-kind', true],
      ]);
      const pass = takeoverPass(s, `${WORKER_IDENTITY_PREFIX}me`, 3000);
      expect(await pass()).toBe(0); // found dead once: suspected, not yet proven
      expect(await pass()).toBe(0); // dead again, but not yet for the confirmation time
      await new Promise((r) => setTimeout(r, 3100));
      expect(await pass()).toBe(1);
      const states = async () => Object.fromEntries(await Promise.all(['p-live', 'p-dead', 'p-unnamed'].map(async (p) =>
        [p, (await s.queue.inspect('print.dispatch', { printer: p })).state])));
      expect(await states()).toEqual({ 'p-live': 'running', 'p-dead': 'queued', 'p-unnamed': 'running' });
      // the run moved on: a second move under the old token changes nothing
      const old = running.find((r) => r.worker === dead)!;
      expect(await s.queue.requeueRun(old)).toBe(false);
      expect(await pass()).toBe(0);
    } finally {
      await live.release();
    }
  }, 60_000);
});
