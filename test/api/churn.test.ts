import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../helpers/env.js';
import { processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../helpers/process.js';
import { eventually } from '../helpers/runtime.js';
import { TcpSink } from '../helpers/tcp-sink.js';

/**
 * Concurrency (issue 20, acceptance): for `CHURN_MS` (60 s) eight clients
 * send random concurrent task creations, appends, starts, pauses, resumes,
 * aborts and deletes, deletes and creations of the documents the tasks use,
 * and print job submissions, cancels and deletes while jobs are delivered to
 * three raw-socket printers, against a real `api` and a real `worker`
 * process sharing PostgreSQL and Redis. Then the invariants:
 * - every item accepted before a start that answered 204 ran in a run of
 *   that start or later: it ended done, failed (its document gone) or
 *   aborted, never left out; no item's effect counted twice, and a done item
 *   counted once;
 * - no document was deleted while a task using it was processing (a trigger
 *   on `entries` in the test's schema records any such delete, inside the
 *   delete's own transaction, so the record commits only with the delete);
 * - no job reached a printer twice (each body carries a marker the sinks
 *   see);
 * - no 5xx, every 4xx with the error body, no error line in either
 *   process's log (a failed log write, a broken foreign key, an unhandled
 *   rejection).
 */
const CHURN_MS = 60_000;
const CLIENTS = 8;
const TASKS = '/v1/services/work/tasks';
let env: ProcessEnv;
let api: TestProcess;
let worker: TestProcess;
let auth: Record<string, string>;
let db: pg.Client;
const sinks: TcpSink[] = [];

beforeAll(async () => {
  env = await processEnv({
    services: { store: { type: 'store' }, work: { type: 'mock', options: { tasks: { itemMs: 20 } } } },
    printDispatch: { retryBaseMs: 200, retryMaxMs: 1000 },
  });
  api = await startProcess('api', env.env);
  await waitReady(api.url!);
  worker = await startProcess('worker', env.env);
  await waitLog(worker, /workers running/);
  auth = { authorization: `Bearer ${await env.token(api.url!)}` };
  db = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path="${env.schema}"` });
  await db.connect();
  // Instrumentation in the test's own schema: a document deleted while a task whose input
  // list names it is processing. It runs in the delete's transaction, after the delete's
  // locks, so it sees the tasks' status as the delete decided on it.
  await db.query(`
    CREATE TABLE churn_deleted_in_use (doc uuid, tid uuid, item_created timestamptz, deleted_at timestamptz);
    CREATE FUNCTION churn_check_delete() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO churn_deleted_in_use
        SELECT OLD.uuid, t.tid, li.created, now()
          FROM list_items li JOIN lists l ON l.lid = li.lid AND l.kind = 'input' JOIN tasks t ON t.tid = l.tid
         WHERE li.doc_uuid = OLD.uuid AND t.status = 'processing' AND li.created < now();
      RETURN OLD;
    END $$;
    CREATE TRIGGER churn_check_delete AFTER DELETE ON entries FOR EACH ROW EXECUTE FUNCTION churn_check_delete();
    -- when each run began and each item was inserted, by the clock (clock_timestamp(), not now():
    -- now() is when the transaction began, and an append whose transaction began before a start's
    -- may still take the task's lock after the start and a pause, and add the item to the paused
    -- task, which is allowed). Both happen under the task's row lock, so an item inserted before a
    -- run's status change committed before the run's statement took its snapshot, and must be in it.
    CREATE TABLE churn_runs (tid uuid, at timestamptz);
    CREATE FUNCTION churn_note_run() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO churn_runs VALUES (NEW.tid, clock_timestamp());
      RETURN NEW;
    END $$;
    CREATE TABLE churn_items (id uuid, at timestamptz);
    CREATE FUNCTION churn_note_items() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO churn_items SELECT id, clock_timestamp() FROM added;
      RETURN NULL;
    END $$;
    CREATE TRIGGER churn_note_items AFTER INSERT ON list_items REFERENCING NEW TABLE AS added
      FOR EACH STATEMENT EXECUTE FUNCTION churn_note_items();
    CREATE TRIGGER churn_note_run AFTER UPDATE OF status ON tasks FOR EACH ROW
      WHEN (NEW.status = 'processing' AND OLD.status <> 'processing') EXECUTE FUNCTION churn_note_run();
  `);
  for (let i = 0; i < 3; i++) sinks.push(await TcpSink.start({ ackDelayMs: 30 }));
}, 180_000);

afterAll(async () => {
  await db?.end().catch(() => {});
  for (const s of sinks) await s.close();
  await env?.cleanup();
});

interface Answer { status: number; body: any } // eslint-disable-line @typescript-eslint/no-explicit-any
const answers: { what: string; status: number; body: unknown }[] = [];

async function call(method: string, path: string, opts: { json?: unknown; body?: string; type?: string } = {}): Promise<Answer> {
  const headers: Record<string, string> = { ...auth };
  let body = opts.body;
  if (opts.json !== undefined) body = JSON.stringify(opts.json);
  if (body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
  const res = await fetch(`${api.url}${path}`, { method, headers, body, signal: AbortSignal.timeout(60_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = text ? JSON.parse(text) : undefined; } catch { /* not JSON */ }
  answers.push({ what: `${method} ${path}`, status: res.status, body: parsed });
  return { status: res.status, body: parsed };
}

const pick = <T>(xs: readonly T[]): T | undefined => xs[Math.floor(Math.random() * xs.length)];
const docHref = (uuid: string) => `/v1/services/store/repo/${uuid}`;

describe('churn: tasks, documents and print jobs changed at once', () => {
  it(`${CHURN_MS / 1000} s of random concurrent operations keep every invariant`, async () => {
    const docs: string[] = [];
    const tasks: string[] = [];
    const jobIds: number[] = [];
    /** item id -> when its append answered, and its task */
    const appended = new Map<string, { tid: string; at: number }>();
    /** tid -> times starts that answered 204 were sent */
    const starts = new Map<string, number[]>();
    const deletedTasks = new Set<string>();

    const newDoc = async () => {
      const d = await call('POST', '/v1/services/store/repo', { json: { name: `d-${randomUUID()}.txt`, type: 'document' } });
      if (d.status !== 200) return;
      await call('PUT', `/v1/services/store/repo/${d.body.uuid}/content`, { body: `doc ${d.body.uuid}`, type: 'text/plain' });
      docs.push(d.body.uuid);
    };
    for (let i = 0; i < 30; i++) await newDoc();
    const printers = sinks.map((_, i) => `churn-${i}`);
    for (const [i, s] of sinks.entries()) expect((await call('POST', '/v3/printers/', { json: { name: printers[i], connection: s.connection } })).status).toBe(200);

    const itemOf = () => (Math.random() < 0.8 && docs.length > 0 ? docHref(pick(docs)!) : `https://example.com/${randomUUID()}.pdf`);
    const hot = () => pick(tasks.slice(-12));
    const ops: [number, () => Promise<unknown>][] = [
      [8, async () => {
        const t = await call('POST', TASKS, { json: { name: 'churn', lists: { input: { embedded: { listItems: Array.from({ length: 1 + Math.floor(Math.random() * 4) }, () => ({ href: itemOf(), metadata: {} })) } } } } });
        if (t.status === 200) tasks.push(t.body.tid);
      }],
      [20, async () => {
        const tid = hot();
        if (!tid) return;
        const a = await call('POST', `${TASKS}/${tid}/input?href=${encodeURIComponent(itemOf())}`);
        if (a.status === 200) appended.set(a.body.id, { tid, at: Date.now() });
      }],
      [16, async () => {
        const tid = hot();
        if (!tid) return;
        const sent = Date.now();
        if ((await call('POST', `${TASKS}/${tid}/action`, { json: { action: 'start' } })).status === 204) starts.set(tid, [...(starts.get(tid) ?? []), sent]);
      }],
      [5, async () => { const tid = hot(); if (tid) await call('POST', `${TASKS}/${tid}/action`, { json: { action: 'pause' } }); }],
      [5, async () => { const tid = hot(); if (tid) await call('POST', `${TASKS}/${tid}/action`, { json: { action: 'resume' } }); }],
      [4, async () => { const tid = hot(); if (tid) await call('POST', `${TASKS}/${tid}/action`, { json: { action: 'abort' } }); }],
      [3, async () => {
        const tid = hot();
        if (tid && (await call('DELETE', `${TASKS}/${tid}`)).status === 204) deletedTasks.add(tid);
      }],
      [5, async () => {
        const uuid = pick(docs);
        if (uuid && (await call('DELETE', `/v1/services/store/repo/${uuid}`)).status === 204) docs.splice(docs.indexOf(uuid), 1);
      }],
      [5, newDoc],
      [10, async () => {
        const marker = randomUUID();
        const j = await call('POST', `/v3/jobs/?printer=${pick(printers)}&name=${marker}`, { body: `%PDF-1.4 job ${marker} ${'x'.repeat(Math.floor(Math.random() * 100_000))}`, type: 'application/pdf' });
        if (j.status === 201) jobIds.push(j.body.id);
      }],
      [5, async () => { const id = pick(jobIds.slice(-20)); if (id) await call('PUT', `/v3/jobs/${id}/cancel`); }],
      [5, async () => { const id = pick(jobIds.slice(-20)); if (id) await call('DELETE', `/v3/jobs/${id}`); }],
    ];
    const total = ops.reduce((n, [w]) => n + w, 0);
    const randomOp = () => {
      let r = Math.random() * total;
      for (const [w, op] of ops) if ((r -= w) < 0) return op;
      return ops[0]![1];
    };
    const until = Date.now() + CHURN_MS;
    let count = 0;
    await Promise.all(Array.from({ length: CLIENTS }, async () => {
      while (Date.now() < until) {
        await randomOp()();
        count++;
      }
    }));

    // settle: paused tasks resumed, until nothing is processing or paused and every job is final
    await eventually(async () => {
      const { rows } = await db.query<{ tid: string; status: string }>("SELECT tid, status FROM tasks WHERE status IN ('processing', 'paused')");
      for (const r of rows) if (r.status === 'paused') await call('POST', `${TASKS}/${r.tid}/action`, { json: { action: 'resume' } });
      const open = await db.query("SELECT 1 FROM print_jobs WHERE status NOT IN ('processed', 'canceled', 'error')");
      return rows.length === 0 && open.rowCount === 0 ? true : undefined;
    }, 120_000, 500);

    // no 5xx; every 4xx with the error body
    const bad = answers.filter((a) => a.status >= 500 || (a.status >= 400 && !(typeof a.body === 'object' && a.body && (a.body as { code?: unknown }).code)));
    expect(bad.slice(0, 5), `${bad.length} of ${answers.length}`).toEqual([]);

    // every item accepted before a successful start ran (or was aborted, or failed on its gone document)
    const items = new Map((await db.query<{ tid: string; item: string; outcome: string }>('SELECT tid, item::text, outcome FROM task_items')).rows.map((r) => [r.item, r]));
    const effects = new Map((await db.query<{ key: string; value: number }>("SELECT key, value FROM connector_state WHERE sid = 'work' AND key LIKE 'effects/%'")).rows
      .map((r) => [r.key.split('/')[2]!, Number(r.value)]));
    const leftOut: string[] = [];
    let checked = 0;
    for (const [item, { tid, at }] of appended) {
      if (deletedTasks.has(tid)) continue;
      const later = (starts.get(tid) ?? []).some((sent) => sent > at);
      if (!later) continue;
      checked++;
      const row = items.get(item);
      if (!row || !['done', 'failed', 'aborted'].includes(row.outcome)) leftOut.push(`${tid}/${item}: ${row?.outcome ?? 'no run'}`);
    }
    expect(leftOut).toEqual([]);
    // the same, to the statement: an input item inserted before its task's last run began is in that run
    // (an append that races a start either goes first and is run, or waits and answers 409, or, when a
    // pause came between, is added to the paused task for the resume)
    const missedSql = `SELECT l.tid, li.id FROM list_items li JOIN lists l ON l.lid = li.lid AND l.kind = 'input'
      JOIN churn_items ci ON ci.id = li.id
      WHERE ci.at < (SELECT max(at) FROM churn_runs r WHERE r.tid = l.tid)
        AND NOT EXISTS (SELECT 1 FROM task_items ti WHERE ti.tid = l.tid AND ti.item = li.id)`;
    expect((await db.query(missedSql)).rows, 'items accepted before a run began and left out of it').toEqual([]);
    // (the query sees such an item: one inserted by hand, then a run begun by hand without it, rolled back)
    await db.query('BEGIN');
    const input = (await db.query<{ lid: string; tid: string }>("SELECT lid, tid FROM lists WHERE kind = 'input' LIMIT 1")).rows[0]!;
    const added = (await db.query<{ id: string }>(`INSERT INTO list_items (id, lid, position, href) VALUES (gen_random_uuid(), $1, 1000000, 'https://example.com/x.pdf')
      RETURNING id::text`, [input.lid])).rows[0]!;
    await db.query("UPDATE tasks SET status = 'idle' WHERE tid = $1", [input.tid]);
    await db.query("UPDATE tasks SET status = 'processing' WHERE tid = $1", [input.tid]);
    // (the task's other items are flagged too when it never ran before: the check is on this one)
    expect((await db.query(missedSql)).rows).toContainEqual({ tid: input.tid, id: added.id });
    await db.query('ROLLBACK');
    expect([...items.values()].filter((r) => !['done', 'failed', 'aborted'].includes(r.outcome)), 'items never finished').toEqual([]);
    expect([...effects].filter(([, n]) => n > 1), 'effects counted twice').toEqual([]);
    const doneWithoutEffect = [...items.values()].filter((r) => r.outcome === 'done' && effects.get(r.item) !== 1);
    expect(doneWithoutEffect, 'done items whose effect is not counted once').toEqual([]);

    // no document deleted while a task using it was processing
    expect((await db.query('SELECT * FROM churn_deleted_in_use')).rows).toEqual([]);
    // (the trigger sees such a delete: one made by hand, rolled back)
    await db.query('BEGIN');
    const used = (await db.query<{ tid: string; doc: string }>(`SELECT l.tid, li.doc_uuid AS doc FROM list_items li JOIN lists l ON l.lid = li.lid AND l.kind = 'input'
      JOIN entries e ON e.uuid = li.doc_uuid WHERE li.created < now() LIMIT 1`)).rows[0]!;
    await db.query("UPDATE tasks SET status = 'processing' WHERE tid = $1", [used.tid]);
    await db.query('DELETE FROM entries WHERE uuid = $1', [used.doc]);
    // (one row per item naming the document: a task may name it twice)
    expect((await db.query('SELECT DISTINCT tid FROM churn_deleted_in_use')).rows).toEqual([{ tid: used.tid }]);
    await db.query('ROLLBACK');

    // no job reached a printer twice
    const seen = new Map<string, number>();
    for (const s of sinks) {
      for (const c of s.connections) {
        const m = /job ([0-9a-f-]{36})/.exec(Buffer.concat(c.chunks).toString('latin1'));
        if (m) seen.set(m[1]!, (seen.get(m[1]!) ?? 0) + 1);
      }
    }
    expect([...seen].filter(([, n]) => n > 1), 'jobs delivered twice').toEqual([]);

    // both processes alive; no error line in their logs
    for (const [label, p] of [['api', api], ['worker', worker]] as const) {
      expect(p.child.exitCode, label).toBeNull();
      const errors = p.logs.filter((l) => /"level":(5|6)0|unhandled|uncaught|foreign key/i.test(l));
      expect(errors.slice(0, 5), `${label} log`).toEqual([]);
    }
    // the churn did what it says
    const printed = (await db.query("SELECT count(*)::int AS n FROM print_jobs WHERE status = 'processed'")).rows[0].n as number;
    const n = (what: RegExp, status: number, code?: string) =>
      answers.filter((a) => what.test(a.what) && a.status === status && (!code || (a.body as { code?: string } | undefined)?.code === code)).length;
    console.log(`churn: ${count} operations, ${answers.length} requests, ${checked} appended items checked against a later start, ${items.size} item runs, `
      + `${seen.size} jobs at printers (${printed} processed); documents deleted ${n(/^DELETE \/v1\/services\/store/, 204)}, refused in use ${n(/^DELETE \/v1\/services\/store/, 409, 'DOCUMENT_IN_USE')}; `
      + `appends refused as the task ran ${n(/\/input\?href/, 409)}; jobs deleted ${n(/^DELETE \/v3\/jobs/, 200)}, refused in delivery ${n(/^DELETE \/v3\/jobs/, 409, 'JOB_IN_DELIVERY')}, canceled ${n(/\/cancel$/, 200)}`);
    expect(checked).toBeGreaterThan(20);
    expect(seen.size).toBeGreaterThan(20);
  }, CHURN_MS + 240_000);
});
