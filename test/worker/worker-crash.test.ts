import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue, Worker } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL } from '../helpers/env.js';
import { killAll, killProcess } from '../helpers/process.js';
import { eventually } from '../helpers/runtime.js';
import { startCluster, type Cluster } from './cluster.js';

/**
 * Nothing strands in Redis: real api and worker processes on PostgreSQL and
 * Redis, workers killed with SIGKILL while imports run, and jobs BullMQ gave
 * up on while their rows were still pending.
 */

/**
 * An import source whose documents answer after `delayMs`, except the names
 * held: those hang until released (or their client goes away), so a test
 * knows exactly which commands are in flight when it kills a worker.
 */
function slowSource(delayMs: number) {
  const held = new Set<string>();
  let holdAll = false;
  const waiting = new Map<string, Array<() => void>>();
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const name = (req.url ?? '/').slice(1);
    hits.set(name, (hits.get(name) ?? 0) + 1);
    const answer = () => setTimeout(() => res.end(`bytes of ${name}`), delayMs);
    if (!holdAll && !held.has(name)) return answer();
    const list = waiting.get(name) ?? [];
    list.push(answer);
    waiting.set(name, list);
  });
  return {
    server, hits,
    holdEverything: () => (holdAll = true),
    /** Holds only these names from now on; everything else (and what was waiting) is answered. */
    holdOnly(names: Iterable<string>) {
      holdAll = false;
      held.clear();
      for (const n of names) held.add(n);
      for (const [name, list] of waiting) {
        if (held.has(name)) continue;
        for (const go of list) go();
        waiting.delete(name);
      }
    },
    hanging: () => [...waiting.values()].reduce((n, l) => n + l.length, 0),
  };
}

let cluster: Cluster;
const source = slowSource(150);
let base: string;

beforeAll(async () => {
  await new Promise<void>((r) => source.server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(source.server.address() as AddressInfo).port}`;
  // short locks so a dead worker's jobs come back within seconds, not a minute
  cluster = await startCluster({ concurrency: { commands: 8, default: 2 }, lockDurationMs: 3000, reconcileIntervalMs: 2000 });
}, 180_000);

afterAll(async () => {
  killAll();
  source.holdOnly([]);
  source.server.closeAllConnections();
  source.server.close();
  await cluster?.close();
});

type Row = { cid: string; state: string; attempts: number; name: string };
const rows = async (where = 'true', params: unknown[] = []): Promise<Row[]> =>
  (await cluster.db.query<Row>(`SELECT cid, state, attempts, parameters->>'name' AS name FROM commands WHERE ${where}`, params)).rows;

async function launchImports(folder: string, count: number, tag: string): Promise<string[]> {
  const cids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    const batch = await Promise.all(Array.from({ length: Math.min(20, count - i) }, async (_, k) => {
      const name = `${tag}-${i + k}.txt`;
      const res = await cluster.call('POST', '/v1/services/store/repo/command', { command: 'import', parameters: { url: `${base}/${name}`, target: folder, name } });
      expect(res.status).toBe(200);
      return res.body.cid as string;
    }));
    cids.push(...batch);
  }
  return cids;
}


describe('stranded jobs', () => {
  it('the worker killed twice in a row during 300 commands: every command reaches a final state', async () => {
    const folder = (await cluster.call('POST', '/v1/services/store/repo', { name: 'crash', type: 'collection' })).body.uuid as string;
    const cids = await launchImports(folder, 300, 'doc');
    const worker1 = await cluster.startWorker();

    // first kill: some commands done, eight hanging at the source
    await eventually(async () => ((await rows(`state = 'success'`)).length >= 30 ? true : undefined), 120_000, 200);
    source.holdEverything();
    const first = await eventually(async () => {
      const running = await rows(`state = 'running'`);
      return running.length === 8 && source.hanging() === 8 ? running : undefined;
    }, 60_000, 100);
    await killProcess(worker1);

    // second kill: while the interrupted commands run again (each hanging in its second run)
    source.holdOnly(first.map((r) => r.name));
    const worker2 = await cluster.startWorker();
    await eventually(async () => {
      const rerun = await rows(`cid = ANY($1) AND state = 'running' AND attempts >= 2`, [first.map((r) => r.cid)]);
      return rerun.length === first.length && first.every((r) => (source.hits.get(r.name) ?? 0) >= 2) ? true : undefined;
    }, 120_000, 100);
    await killProcess(worker2);

    source.holdOnly([]);
    const worker3 = await cluster.startWorker();
    const final = await eventually(async () => {
      const all = await rows(`cid = ANY($1)`, [cids]);
      return all.every((r) => r.state === 'success' || r.state === 'failure') ? all : undefined;
    }, 180_000, 500);
    expect(final).toHaveLength(300);
    // nothing was given up on, and the twice-interrupted ones ran a third time
    expect(final.filter((r) => r.state !== 'success')).toEqual([]);
    for (const r of first) expect(final.find((f) => f.cid === r.cid)!.attempts).toBeGreaterThanOrEqual(3);
    // each import created exactly one document
    const { rows: kids } = await cluster.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM entries WHERE parent = $1`, [folder]);
    expect(kids[0]!.n).toBe(300);
    await killProcess(worker3);
  }, 600_000);

  it('a job failed past its attempts while its row is pending is re-created by the reconciler and completes', async () => {
    const folder = (await cluster.call('POST', '/v1/services/store/repo', { name: 'failed', type: 'collection' })).body.uuid as string;
    const cids = await launchImports(folder, 3, 'failing');
    // A worker of another build that fails every attempt (Redis is down for it, a
    // bug, ...): BullMQ retries with backoff, then keeps the jobs as failed.
    const queue = new Queue('commands', { connection: { url: TEST_REDIS_URL }, prefix: cluster.prefix });
    const broken = new Worker('commands', async () => {
      throw new Error('transient failure');
    }, { connection: { url: TEST_REDIS_URL, maxRetriesPerRequest: null }, prefix: cluster.prefix, concurrency: 3 });
    try {
      await eventually(async () => ((await queue.getJobCounts('failed')).failed === 3 ? true : undefined), 120_000, 250);
      const failed = await queue.getJobs(['failed']);
      expect(failed.map((j) => j.attemptsMade)).toEqual([5, 5, 5]);
    } finally {
      await broken.close();
    }
    expect((await rows(`cid = ANY($1)`, [cids])).map((r) => r.state)).toEqual(['queued', 'queued', 'queued']);

    // a real worker: its reconciler finds the failed jobs and runs them afresh
    const worker = await cluster.startWorker();
    try {
      const done = await eventually(async () => {
        const all = await rows(`cid = ANY($1)`, [cids]);
        return all.every((r) => r.state === 'success') ? all : undefined;
      }, 120_000, 250);
      expect(done).toHaveLength(3);
      expect(worker.logs.some((l) => /"recreated":3/.test(l))).toBe(true);
      const { rows: counted } = await cluster.db.query<{ count: number }>(`SELECT count FROM job_recreations WHERE job_id = ANY($1)`, [cids.map((c) => `command.${c}.run`)]);
      expect(counted.map((r) => r.count)).toEqual([1, 1, 1]);
      expect((await queue.getJobCounts('failed')).failed).toBe(0);
    } finally {
      await queue.close();
      await killProcess(worker);
    }
  }, 300_000);
});
