import { Redis } from 'ioredis';
import pg from 'pg';
import { expect } from 'vitest';
import { TestClient } from '../../../helpers/client.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL } from '../../../helpers/env.js';
import { processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../../../helpers/process.js';
import { eventually } from '../../../helpers/runtime.js';

/**
 * What the dispatch crash tests with real processes share: an `api`
 * process, `worker` processes started (and SIGKILLed) by the test, a
 * database client on their schema, and jobs whose data starts with a tag of
 * their own (`crash-job-<n>`), so what a printer received names the job.
 */
export interface CrashFleet {
  pe: ProcessEnv;
  api: TestClient;
  db: pg.Client;
  /** `env` adds to (or replaces) the fleet's environment for this worker (its own DATABASE_URL, say). */
  startWorker(env?: Record<string, string>): Promise<TestProcess>;
  close(): Promise<void>;
}

/** `config.queues` and `config.printDispatch` replace the fleet's (the takeover tests keep BullMQ's default lock). */
export async function startCrashFleet(config: { queues?: Record<string, unknown>; printDispatch?: Record<string, unknown> } = {}): Promise<CrashFleet> {
  const pe = await processEnv({
    // short BullMQ locks: a killed worker's printer runs are taken over within seconds
    queues: config.queues ?? { lockDurationMs: 2000, reconcileIntervalMs: 1000, concurrency: { default: 2, print: 32 } },
    printDispatch: config.printDispatch ?? { retryBaseMs: 200, retryMaxMs: 1000, connectTimeoutMs: 5000, idleTimeoutMs: 10_000 },
  });
  const server = await startProcess('api', pe.env);
  await waitReady(server.url!);
  const api = new TestClient(server.url!, await pe.token(server.url!));
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path="${pe.schema}"` });
  await db.connect();
  return {
    pe, api, db,
    async startWorker(env = {}) {
      const w = await startProcess('worker', { ...pe.env, ...env });
      await waitLog(w, /workers running/);
      return w;
    },
    async close() {
      await db.end().catch(() => {});
      await pe.cleanup();
    },
  };
}

/** Job n's data: its tag, then filler of a size that varies with n (plus `extra` bytes). */
export const payload = (n: number, extra = 0) => Buffer.concat([Buffer.from(`crash-job-${n}\n`), Buffer.alloc(200 + (n % 7) * 100 + extra, 0x41)]);
export const tagOf = (bytes: Buffer) => /^crash-job-(\d+)\n/.exec(bytes.subarray(0, 32).toString('latin1'))?.[1];

/** Submits jobs 0..count-1 over HTTP (8 clients) to `printerOf(n)`; answers the job id by tag. */
export async function submitAll(api: TestClient, count: number, printerOf: (n: number) => string, body: (n: number) => Buffer = (n) => payload(n)): Promise<Map<string, string>> {
  const idOf = new Map<string, string>();
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < count) {
      const n = next++;
      const res = await api.request('POST', `/v3/jobs/?printer=${encodeURIComponent(printerOf(n))}&name=job-${n}`, { body: body(n), headers: { 'content-type': 'text/plain' } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      idOf.set(String(n), String(res.body.id));
    }
  }));
  return idOf;
}

/**
 * Where a printer's dispatch job is in BullMQ (`print.dispatch.<printer>` in
 * the queue `print`), its lock and its last stack lines: for the failure
 * message of a crash test whose printer stopped.
 */
export async function dispatchJobState(prefix: string, printer: string): Promise<string> {
  const redis = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    const id = `print.dispatch.${encodeURIComponent(printer)}`;
    const key = (k: string) => `${prefix}:print:${k}`;
    const [active, wait, delayed, completed, failed, lock, hash] = await Promise.all([
      redis.lpos(key('active'), id), redis.lpos(key('wait'), id), redis.zscore(key('delayed'), id),
      redis.zscore(key('completed'), id), redis.zscore(key('failed'), id), redis.get(`${key(id)}:lock`), redis.hgetall(key(id)),
    ]);
    const where = { active: active !== null, wait: wait !== null, delayed, completed, failed, locked: lock !== null };
    return `${id}: ${JSON.stringify(where)}; job ${JSON.stringify({ pb: hash.pb, ats: hash.ats, atm: hash.atm, stc: hash.stc, failedReason: hash.failedReason, finishedOn: hash.finishedOn, processedOn: hash.processedOn })}`;
  } catch (err) {
    return `dispatch job of ${printer}: not read (${(err as Error).message})`;
  } finally {
    redis.disconnect();
  }
}

export type JobRow = { id: string; printer: string; status: string; message: string | null; handoff_at: Date | null };
export const allJobs = async (db: pg.Client) =>
  (await db.query<JobRow>('SELECT id::text, printer, status, message, handoff_at FROM print_jobs ORDER BY id')).rows;
/** The jobs a dead worker left handed off (in `processing` with the mark): the next run of their printer finds them uncertain. */
export const handedOff = async (db: pg.Client) => (await allJobs(db)).filter((j) => j.status === 'processing' && j.handoff_at !== null);

/**
 * `handedOff` once the sessions of `killed` (exited) have ended: a statement
 * PostgreSQL had received before the kill still runs and commits (an
 * outcome with the next hand-off, found only after the process was gone),
 * and a session ends only then (`application_name` `wcr:<pid>`).
 */
export async function leftInFlight(db: pg.Client, killed: TestProcess): Promise<JobRow[]> {
  await killed.exited;
  await eventually(async () => {
    const { rows } = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [`wcr:${killed.child.pid}`]);
    return rows[0]!.n === 0 ? true : undefined;
  }, 30_000, 20);
  return handedOff(db);
}

/**
 * Waits until all `count` jobs are `processed` or `error`; when they do not
 * get there in time, the error says how many were in which state, per
 * printer for those not final (so a failure in a loaded run can be read).
 */
export const allFinal = async (db: pg.Client, count: number, timeoutMs = 240_000) => {
  let last: JobRow[] = [];
  try {
    return await eventually(async () => {
      const rows = (last = await allJobs(db));
      return rows.length === count && rows.every((r) => r.status === 'processed' || r.status === 'error') ? rows : undefined;
    }, timeoutMs, 250);
  } catch (err) {
    const tally = (rows: JobRow[], key: (r: JobRow) => string) => JSON.stringify(rows.reduce<Record<string, number>>((m, r) => ((m[key(r)] = (m[key(r)] ?? 0) + 1), m), {}));
    const open = last.filter((r) => r.status !== 'processed' && r.status !== 'error');
    throw new Error(`${(err as Error).message}: ${last.length} of ${count} jobs, by state ${tally(last, (r) => r.status)}; not final, by printer and state ${tally(open, (r) => `${r.printer}:${r.status}`)}`, { cause: err });
  }
};

/** Copies received per tag, and how many of them were whole (equal to `expected(tag)`). */
export function countReceipts(documents: Iterable<Buffer>, expected: (n: number) => Buffer = (n) => payload(n)): Map<string, { copies: number; whole: number }> {
  const out = new Map<string, { copies: number; whole: number }>();
  for (const bytes of documents) {
    const tag = tagOf(bytes);
    if (tag === undefined) continue;
    const r = out.get(tag) ?? { copies: 0, whole: 0 };
    r.copies++;
    if (bytes.equals(expected(Number(tag)))) r.whole++;
    out.set(tag, r);
  }
  return out;
}

/**
 * The at-most-once verdict after every job is final: no tag received twice
 * and none unknown; exactly the jobs left handed off at the kills ended in
 * `error` "delivery uncertain" (with the recovery's log line); every
 * `processed` job received once and whole.
 */
export async function expectAtMostOnce(fleet: CrashFleet, final: JobRow[], got: Map<string, { copies: number; whole: number }>, idOf: Map<string, string>, inFlightAtKill: string[][]): Promise<void> {
  const tagOfId = new Map([...idOf].map(([tag, id]) => [id, tag]));
  expect([...got].filter(([, r]) => r.copies > 1)).toEqual([]);
  expect([...got.keys()].filter((t) => !idOf.has(t))).toEqual([]);
  const errors = final.filter((r) => r.status === 'error');
  const processed = final.filter((r) => r.status === 'processed');
  const wanted = new Set(inFlightAtKill.flat());
  const odd = [...errors.map((r) => r.id).filter((id) => !wanted.has(id)), ...[...wanted].filter((id) => !errors.some((r) => r.id === id))];
  // the jobs where the verdict and the kills disagree, with their logs (what each run did with them)
  const why = await Promise.all(odd.slice(0, 6).map(async (id) => `job ${id}: ${JSON.stringify(final.find((r) => r.id === id))}\n  `
    + (await fleet.api.get(`/v3/jobs/${id}/logs`)).body.map((l: { date?: string; text: string }) => `${l.date ?? ''} ${l.text}`).join('\n  ')));
  expect(errors.map((r) => r.id).sort(), why.join('\n')).toEqual([...wanted].sort());
  expect(errors.filter((r) => r.message !== 'delivery uncertain')).toEqual([]);
  expect(processed.filter((r) => got.get(tagOfId.get(r.id)!)?.whole !== 1).map((r) => r.id)).toEqual([]);
  expect(processed.length + errors.length).toBe(idOf.size);
  for (const r of errors.slice(0, 10)) {
    const log = (await fleet.api.get(`/v3/jobs/${r.id}/logs`)).body.map((l: { text: string }) => l.text).join('\n');
    expect(log).toMatch(/delivery uncertain: handed to the device at .* without an acknowledgement/);
  }
}

/** An operator repeats job `id`: it ends `processed` again. */
export async function repeatJob(api: TestClient, id: string): Promise<void> {
  const repeated = await api.put(`/v3/jobs/${id}/repeat`);
  expect(repeated.status, JSON.stringify(repeated.body)).toBe(200);
  await eventually(async () => ((await api.get(`/v3/jobs/${id}`)).body.status === 'processed' ? true : undefined), 60_000, 100);
}
