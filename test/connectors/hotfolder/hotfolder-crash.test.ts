import { createHash, randomBytes } from 'node:crypto';
import { appendFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import { killAll, killProcess, processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';
import { eventually } from '../../helpers/runtime.js';

/**
 * Exactly once under crashes, with real processes: an API process and
 * worker processes on PostgreSQL and Redis, files written slowly and in
 * parts into the hot folder, workers killed with SIGKILL in the middle.
 * Every file must end up exactly once in the repository (same sha256, no
 * numbered duplicate), exactly one task per file, every source in done/.
 */
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

afterAll(() => killAll());

function config(leaseTtlMs: number) {
  return {
    services: {
      store: { type: 'store' },
      demo: { type: 'mock', options: { tasks: { itemMs: 0 } } },
      hot: {
        type: 'hotfolder',
        options: {
          stableMs: 300, rescanMs: 2000, leaseTtlMs, concurrency: 4,
          folders: [{ path: 'in', store: { service: 'store' }, task: { service: 'demo', name: '{name}', start: true } }],
        },
      },
    },
  };
}

/** Writes `n` files of random bytes into `dir`, each in three parts a little apart, `parallel` at a time; returns name -> sha256. */
async function writeSlowly(dir: string, n: number, parallel: number, prefix: string): Promise<Map<string, string>> {
  const expected = new Map<string, string>();
  let next = 0;
  await Promise.all(Array.from({ length: parallel }, async () => {
    while (next < n) {
      const i = next++;
      const name = `${prefix}-${String(i).padStart(4, '0')}.bin`;
      const body = randomBytes(2000 + ((i * 7919) % 30_000));
      expected.set(name, sha(body));
      const third = Math.floor(body.length / 3);
      await appendFile(path.join(dir, name), body.subarray(0, third));
      await sleep(20);
      await appendFile(path.join(dir, name), body.subarray(third, 2 * third));
      await sleep(20);
      await appendFile(path.join(dir, name), body.subarray(2 * third));
    }
  }));
  return expected;
}

/**
 * Runs `wait`; when it fails, the error also tells what the folder and each
 * process showed then (the last log lines), so a failure in a loaded CI run
 * can be read from its output alone.
 */
async function explained<T>(wait: Promise<T>, dir: string, procs: Record<string, TestProcess>, writer?: Promise<unknown>): Promise<T> {
  try {
    // a writer that fails (the folder missing) fails the wait at once, not after its timeout
    return await (writer ? Promise.race([wait, writer.then(() => wait)]) : wait);
  } catch (err) {
    const count = async (d: string) => (await readdir(d).catch(() => [])).length;
    const lines = [`folder: ${await count(dir)} entries, done/ ${await count(path.join(dir, 'done'))}, error/ ${await count(path.join(dir, 'error'))}`];
    for (const [name, p] of Object.entries(procs)) lines.push(`--- ${name} (pid ${p.child.pid}, exit ${p.child.exitCode ?? p.child.signalCode ?? 'running'}), last log lines:`, ...p.logs.slice(-40));
    throw new Error(`${(err as Error).message}\n${lines.join('\n')}`, { cause: err });
  }
}

/** Waits until every expected file is in done/ and none is left in the folder. */
async function allDone(dir: string, expected: Map<string, string>, timeoutMs: number): Promise<void> {
  await eventually(async () => {
    const done = new Set(await readdir(path.join(dir, 'done')));
    const left = (await readdir(dir)).filter((n) => n !== 'done' && n !== 'error');
    return left.length === 0 && [...expected.keys()].every((n) => done.has(n)) ? true : undefined;
  }, timeoutMs, 500);
}

/** Claims not finished (state claimed or stored). */
async function unfinishedClaims(env: ProcessEnv): Promise<number> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${env.schema}"`);
    return Number((await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM intake_files WHERE state IN ('claimed', 'stored')`)).rows[0]!.n);
  } finally {
    await client.end();
  }
}

/** What the repository and the task service hold, read from the database. */
async function check(env: ProcessEnv, expected: Map<string, string>): Promise<void> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await client.connect();
  try {
    await client.query(`SET search_path TO "${env.schema}"`);
    const docs = (await client.query<{ name: string; sha256: string | null }>(
      `SELECT name, sha256 FROM entries WHERE sid = 'store' AND type = 'document'`,
    )).rows;
    const byName = new Map<string, number>();
    for (const d of docs) byName.set(d.name, (byName.get(d.name) ?? 0) + 1);
    // exactly once: one document per file, none under a numbered name, each complete
    expect(docs.length).toBe(expected.size);
    for (const d of docs) {
      expect(expected.get(d.name), `unexpected document ${d.name}`).toBeDefined();
      expect(d.sha256, `content of ${d.name}`).toBe(expected.get(d.name));
    }
    expect([...byName.values()].every((n) => n === 1)).toBe(true);
    const tasks = (await client.query<{ name: string; n: string }>(`SELECT name, count(*)::text AS n FROM tasks WHERE sid = 'demo' GROUP BY name`)).rows;
    expect(tasks.length).toBe(expected.size);
    expect(tasks.every((t) => t.n === '1' && expected.has(t.name))).toBe(true);
    const claims = (await client.query<{ state: string; n: string }>(`SELECT state, count(*)::text AS n FROM intake_files GROUP BY state`)).rows;
    expect(claims).toEqual([{ state: 'done', n: String(expected.size) }]);
  } finally {
    await client.end();
  }
}

describe('hot folder: exactly once under kill -9', () => {
  it('crash: 1,000 files written slowly in parts while the worker is killed three times: each stored once, complete, one task each, all in done/', async () => {
    // the writer is awaited before the folder is removed, also when the test fails
    let writing: Promise<Map<string, string>> | undefined;
    const env = await processEnv(config(3000));
    try {
      const api = await startProcess('api', env.env);
      await waitReady(api.url!);
      let worker: TestProcess = await startProcess('worker', env.env);
      await waitLog(worker, /"sid":"hot",.*"msg":"intake started"/);
      const dir = path.join(env.dataDir, 'in');
      writing = writeSlowly(dir, 1000, 6, 'c');
      // claims a kill left unfinished: proof that the kills hit files in the middle of being taken
      let leftUnfinished = 0;
      for (let k = 0; k < 3; k++) {
        await explained(eventually(async () => ((await readdir(path.join(dir, 'done'))).length >= 150 * (k + 1) ? true : undefined), 120_000, 50),
          dir, { api, worker }, writing);
        await killProcess(worker);
        leftUnfinished += await unfinishedClaims(env);
        worker = await startProcess('worker', env.env);
      }
      expect(leftUnfinished).toBeGreaterThan(0);
      const expected = await writing;
      await explained(allDone(dir, expected, 240_000), dir, { api, worker });
      await check(env, expected);
      expect((await readdir(path.join(dir, 'error')))).toEqual([]);
    } finally {
      await writing?.catch(() => undefined);
      await env.cleanup();
    }
  }, 420_000);

  it('takeover: two workers; the lease holder is killed in the middle of 500 files: the other takes over and every file is taken once', async () => {
    // the writer is awaited before the folder is removed, also when the test fails
    let writing: Promise<Map<string, string>> | undefined;
    const env = await processEnv(config(2000));
    try {
      const api = await startProcess('api', env.env);
      await waitReady(api.url!);
      const workers = [await startProcess('worker', env.env), await startProcess('worker', env.env)];
      const holderPid = async () => eventually(async () => {
        const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
        await client.connect();
        try {
          await client.query(`SET search_path TO "${env.schema}"`);
          const row = (await client.query<{ holder: string }>(`SELECT holder FROM connector_leases WHERE name = 'service:hot' AND expires > now()`)).rows[0];
          return row ? Number(row.holder.split(':')[1]) : undefined;
        } finally {
          await client.end();
        }
      }, 60_000, 200);
      const pid = await holderPid();
      const holder = workers.find((w) => w.child.pid === pid)!;
      const other = workers.find((w) => w !== holder)!;
      expect(holder).toBeDefined();
      // the lease is taken before the intake starts and makes the folder: files are dropped once it has
      await waitLog(holder, /"sid":"hot",.*"msg":"intake started"/);
      const dir = path.join(env.dataDir, 'in');
      writing = writeSlowly(dir, 500, 16, 't');
      // in the middle: some files taken, most still to come
      await explained(eventually(async () => ((await readdir(path.join(dir, 'done'))).length >= 100 ? true : undefined), 120_000, 100),
        dir, { api, holder, other }, writing);
      await killProcess(holder);
      const expected = await writing;
      await explained(allDone(dir, expected, 180_000), dir, { api, other });
      expect(await holderPid()).toBe(other.child.pid);
      await check(env, expected);
    } finally {
      await writing?.catch(() => undefined);
      await env.cleanup();
    }
  }, 420_000);
});
