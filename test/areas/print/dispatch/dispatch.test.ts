import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reconcile } from '../../../../src/worker/reconciler.js';
import { abandonDispatch, dispatchHandlers } from '../../../../src/areas/print/dispatch/index.js';
import { AREAS } from '../../../../src/areas/index.js';
import { dropQueues, eventually, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { INLINE_DOCUMENT_MAX } from '../../../../src/areas/print/jobs/job-document.js';
import { lockPrinterDispatch } from '../../../../src/areas/print/dispatch/dispatch-store.js';
import { addPrinter, jobs, settled, logText, setPrinter, startDispatchRuntime, submit, until, wake } from './harness.js';

let rt: TestRuntime;
const sinks: TcpSink[] = [];
const sink = async (opts?: ConstructorParameters<typeof TcpSink>[0]) => {
  const s = await TcpSink.start(opts);
  sinks.push(s);
  return s;
};
beforeAll(async () => {
  rt = await startDispatchRuntime();
});
afterAll(async () => {
  await rt?.close();
  for (const s of sinks) await s.close();
});

// real processes on a shared machine: generous limits, the assertions are about order and counts, not speed
describe('dispatch engine', { timeout: 90_000 }, () => {
  it('20 printers, 500 jobs of mixed priorities: each sink gets its jobs in priority then FIFO order, once, never two at once', async () => {
    const printers = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
      const s = await sink();
      const name = `bulk ${i} / ünïcode's`;
      // held while the jobs go in, so the order is decided by priority and submission alone
      await addPrinter(rt, name, s.connection, { paused: true });
      return { name, sink: s };
    }));
    const expected = new Map<string, { body: string; priority: number; n: number }[]>();
    const ids: string[] = [];
    const PRIORITIES = [10, 50, 50, 90, 0, 100];
    for (let n = 0; n < 500; n++) {
      const p = printers[(n * 7) % 20]!;
      const priority = PRIORITIES[(n * 13) % PRIORITIES.length]!;
      const body = `job ${n} for ${p.name} at priority ${priority}\n`;
      ids.push((await submit(rt, p.name, body, { priority })).id);
      (expected.get(p.name) ?? expected.set(p.name, []).get(p.name)!).push({ body, priority, n });
    }
    for (const p of printers) {
      await setPrinter(rt, p.name, { paused: false });
      await wake(rt, p.name);
    }
    const done = await until(rt, ids, ['processed'], 150_000);
    expect(done.every((j) => j.handoff_at === null && j.attempts === 1)).toBe(true);
    for (const p of printers) {
      const want = expected.get(p.name)!.slice().sort((a, b) => b.priority - a.priority || a.n - b.n).map((e) => e.body);
      await eventually(async () => (p.sink.jobs().length >= want.length ? true : undefined), 5000);
      expect(p.sink.received().map(String), p.name).toEqual(want);
      expect(p.sink.maxConcurrent(), p.name).toBe(1);
    }
    const { rows } = await rt.services.db.query<{ name: string; last_printed: Date | null; error: unknown }>('SELECT name, last_printed, error FROM printers WHERE name LIKE $1', ['bulk %']);
    expect(rows.every((r) => r.last_printed !== null && r.error === null)).toBe(true);
  }, 180_000);

  it('documents stored with the job and in the blob store reach the printer byte for byte, in order', async () => {
    const s = await sink();
    await addPrinter(rt, 'sizes', s.connection, { paused: true });
    const bodies = [1, INLINE_DOCUMENT_MAX, INLINE_DOCUMENT_MAX + 1, 100, 3 * INLINE_DOCUMENT_MAX].map((n, i) => Buffer.alloc(n, 65 + i));
    const ids: string[] = [];
    for (const body of bodies) ids.push((await submit(rt, 'sizes', body)).id);
    const { rows } = await rt.services.db.query<{ job_id: string }>('SELECT job_id FROM print_documents WHERE job_id = ANY($1::bigint[]) ORDER BY job_id', [ids]);
    expect(rows.map((r) => String(r.job_id))).toEqual([ids[0], ids[1], ids[3]].map(String));
    await setPrinter(rt, 'sizes', { paused: false });
    await wake(rt, 'sizes');
    await until(rt, ids, ['processed']);
    await eventually(async () => (s.jobs().length >= bodies.length ? true : undefined), 5000);
    expect(s.received()).toEqual(bodies);
  });

  it('a printer that is down: its jobs are postponed, then printed in order, each once, when it comes up', async () => {
    const s = await sink();
    await s.down();
    await addPrinter(rt, 'flaky', s.connection);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await submit(rt, 'flaky', `flaky ${i}\n`)).id);
    const head = await eventually(async () => {
      const [first] = await jobs(rt, [ids[0]!]);
      return first!.status === 'postponed' && first!.attempts >= 2 ? first : undefined;
    }, 20_000, 50);
    expect(head.message).toMatch(/ECONNREFUSED/);
    expect(head.next_attempt_at).not.toBeNull();
    // the others wait behind it: nothing overtakes the postponed head
    expect((await jobs(rt, ids.slice(1))).map((j) => j.status)).toEqual(Array(4).fill('waitprocessing'));
    expect(await logText(rt, ids[0]!)).toMatch(/postponed, nothing delivered: .*ECONNREFUSED.*next try in/);
    const { rows } = await rt.services.db.query<{ error: { message: string } | null }>('SELECT error FROM printers WHERE name = $1', ['flaky']);
    expect(rows[0]!.error?.message).toMatch(/ECONNREFUSED/);
    await s.up();
    await until(rt, ids, ['processed'], 20_000);
    expect(s.received().map(String)).toEqual([0, 1, 2, 3, 4].map((i) => `flaky ${i}\n`));
    expect(s.maxConcurrent()).toBe(1);
    const after = await rt.services.db.query<{ error: unknown }>('SELECT error FROM printers WHERE name = $1', ['flaky']);
    expect(after.rows[0]!.error).toBeNull();
  });

  it('a paused printer holds its queue; resume releases it', async () => {
    const s = await sink();
    await addPrinter(rt, 'held', s.connection, { paused: true });
    const ids = [(await submit(rt, 'held', 'a')).id, (await submit(rt, 'held', 'b')).id];
    await new Promise((r) => setTimeout(r, 1000));
    expect(s.connections).toHaveLength(0);
    expect((await jobs(rt, ids)).map((j) => j.status)).toEqual(['waitprocessing', 'waitprocessing']);
    await setPrinter(rt, 'held', { paused: false });
    await wake(rt, 'held');
    await until(rt, ids, ['processed']);
    expect(s.received().map(String)).toEqual(['a', 'b']);
  });

  it('a redirect moves the waiting jobs to the target, in order; new jobs follow it', async () => {
    const from = await sink();
    const to = await sink();
    await addPrinter(rt, 'old', from.connection, { paused: true });
    await addPrinter(rt, 'new', to.connection);
    const ids = [(await submit(rt, 'old', 'r1')).id, (await submit(rt, 'old', 'r2', { priority: 90 })).id];
    await setPrinter(rt, 'old', { redirect: 'new' });
    await wake(rt, 'old');
    await until(rt, ids, ['processed']);
    ids.push((await submit(rt, 'old', 'r3')).id);
    const done = await until(rt, ids, ['processed']);
    expect(done.map((j) => [j.printer, j.redirected_from])).toEqual([['new', 'old'], ['new', 'old'], ['new', 'old']]);
    expect(to.received().map(String)).toEqual(['r2', 'r1', 'r3']);
    expect(from.connections).toHaveLength(0);
    expect(await logText(rt, ids[0]!)).toMatch(/redirected from "old" to "new"/);
  });

  it('permanent failures end in error with the reason in the log; the queue goes on', async () => {
    const reset = await sink();
    await addPrinter(rt, 'nowhere', 'socket://nonexistent.invalid:9100');
    await addPrinter(rt, 'smb-none', 'smb://printer.example/queue');
    const a = await submit(rt, 'nowhere', 'x');
    const b = await submit(rt, 'smb-none', 'y');
    const [ja, jb] = await until(rt, [a.id, b.id], ['error']);
    expect(ja!.message).toMatch(/ENOTFOUND/);
    expect(await logText(rt, a.id)).toMatch(/refused: .*ENOTFOUND/);
    expect(jb!.message).toMatch(/no print backend for smb:\/\//);
    // the next job of a printer runs after one ended in error
    await setPrinter(rt, 'nowhere', { connection: reset.connection });
    const c = await submit(rt, 'nowhere', 'z');
    await until(rt, [c.id], ['processed']);
    expect(reset.received().map(String)).toEqual(['z']);
  });

  it('a flow runs in preprocessing; the printer gets its output; stages are dropped unless kept', async () => {
    const s = await sink();
    const doc = await PDFDocument.create();
    for (let i = 0; i < 4; i++) doc.addPage([300, 400]);
    const pdf = Buffer.from(await doc.save());
    await rt.services.db.query(`INSERT INTO print_flows (name, steps) VALUES ('first-two', $1)`, [JSON.stringify([{ use: 'pageRange', with: { pages: '1-2' } }, { use: 'stampText', with: { text: 'COPY' } }])]);
    await addPrinter(rt, 'flowed', s.connection, { flow: 'first-two' });
    const job = await submit(rt, 'flowed', pdf, { mimeType: 'application/pdf' });
    expect(job.status).toBe('waitpreprocessing');
    const kept = await submit(rt, 'flowed', pdf, { mimeType: 'application/pdf' });
    await rt.services.db.query('UPDATE print_jobs SET keep_tempfiles = true WHERE id = $1', [kept.id]);
    const [j1, j2] = await until(rt, [job.id, kept.id], ['processed']);
    expect(j1!.pages).toBe(2);
    expect(j1!.stages).toEqual([]);
    expect(j2!.stages.map((st) => st.stage)).toEqual(['step-0-pageRange', 'preprocessed']);
    const printed = await PDFDocument.load(s.received()[0]!);
    expect(printed.getPageCount()).toBe(2);
    expect(await logText(rt, job.id)).toMatch(/waitpreprocessing -> preprocessing[\s\S]*preprocessed with flow "first-two" \(2 pages\)[\s\S]*delivered/);
    const bad = await submit(rt, 'flowed', 'not a pdf');
    const [jb] = await until(rt, [bad.id], ['error']);
    expect(jb!.message).toMatch(/flow step 0 \(pageRange\) failed/);
  });

  it('the reconciler re-creates dispatch work from PostgreSQL after Redis lost it', async () => {
    const s = await sink();
    await addPrinter(rt, 'forgotten', s.connection, { paused: true });
    const ids = [(await submit(rt, 'forgotten', 'f1')).id, (await submit(rt, 'forgotten', 'f2')).id];
    // the wake-ups went through Redis and the (held) run is over; now Redis forgets everything
    await settled(rt, 'forgotten');
    await dropQueues(rt.prefix);
    await setPrinter(rt, 'forgotten', { paused: false });
    const counts = await reconcile(rt.services, AREAS);
    expect(counts['print-jobs']?.enqueued).toBeGreaterThanOrEqual(1);
    await until(rt, ids, ['processed']);
    expect(s.received().map(String)).toEqual(['f1', 'f2']);
  });

  it('abandon (the reconciler gave up on a printer\'s dispatch): the job blocking its queue ends in error, the rest wait', async () => {
    const s = await sink();
    await addPrinter(rt, 'given-up', s.connection, { paused: true });
    const ids = [(await submit(rt, 'given-up', 'g1')).id, (await submit(rt, 'given-up', 'g2')).id];
    // the submissions' dispatch run (held: paused) is over before the scene is set
    await settled(rt, 'given-up');
    // as a killed worker leaves it: handed off, no outcome
    await rt.services.db.query(`UPDATE print_jobs SET status = 'processing', handoff_at = now() WHERE id = $1`, [ids[0]]);
    await abandonDispatch(rt.services, { name: 'print.dispatch', data: { printer: 'given-up' } }, 're-created 4 times');
    const [first, second] = await jobs(rt, ids);
    expect(first).toMatchObject({ status: 'error', handoff_at: null });
    expect(first!.message).toMatch(/^delivery uncertain: dispatch abandoned \(re-created 4 times\)/);
    expect(second!.status).toBe('waitprocessing');
    expect(s.connections).toHaveLength(0);
  });

  it('two runs for one printer at once (a duplicate after a lost BullMQ lock): no job reaches the printer twice, none is lost', async () => {
    const s = await sink();
    await addPrinter(rt, 'twice', s.connection, { paused: true });
    const ids: string[] = [];
    for (let i = 0; i < 60; i++) ids.push((await submit(rt, 'twice', `twice ${i}\n`)).id);
    await settled(rt, 'twice');
    // released without a wake-up: only the two runs below serve the printer
    await setPrinter(rt, 'twice', { paused: false });
    const run = dispatchHandlers(rt.services)['print.dispatch']!;
    const ctx = { attempt: 1, finalAttempt: false, signal: new AbortController().signal, progress: async () => {} };
    await Promise.all([run({ printer: 'twice' }, ctx), run({ printer: 'twice' }, ctx)]);
    const done = await jobs(rt, ids);
    const bodies = s.received().map(String);
    // each job at most once on the device; a job the other run found in flight ends "delivery uncertain", never sent again
    expect(new Set(bodies).size).toBe(bodies.length);
    for (const [i, job] of done.entries()) {
      if (job.status === 'processed') expect(bodies).toContain(`twice ${i}\n`);
      else expect({ status: job.status, message: job.message }).toMatchObject({ status: 'error', message: expect.stringMatching(/^delivery uncertain/) });
      expect(job.handoff_at).toBeNull();
    }
    expect(done.filter((j) => j.status === 'processed').length).toBeGreaterThan(0);
  });
  it('a run that ends idle looks once more 250 ms later, unless the workers stopped meanwhile (no query on a closing pool)', async () => {
    const s = await sink();
    await addPrinter(rt, 'tail', s.connection);
    const ctx = { attempt: 1, finalAttempt: false, signal: new AbortController().signal, progress: async () => {} };
    // the tail check's own statement, counted on a database that passes everything else through
    const db = rt.services.db;
    let tailQueries = 0;
    const counting = new Proxy(db, {
      get: (target, prop, receiver) => (prop === 'query'
        ? (text: string, params?: unknown[]) => {
          if (text.includes('WHERE p.name = ANY($1::text[]) AND (p.redirect')) tailQueries++;
          return target.query(text, params);
        }
        : Reflect.get(target, prop, receiver)),
    });
    const services = { ...rt.services, db: counting };
    const running = new AbortController();
    await dispatchHandlers(services, running.signal)['print.dispatch']!({ printer: 'tail' }, ctx);
    await new Promise((r) => setTimeout(r, 600));
    expect(tailQueries).toBe(1);
    const stopping = new AbortController();
    const run = dispatchHandlers(services, stopping.signal)['print.dispatch']!;
    await run({ printer: 'tail' }, ctx);
    stopping.abort();
    await run({ printer: 'tail' }, ctx);
    await new Promise((r) => setTimeout(r, 600));
    expect(tailQueries).toBe(1);
    expect(s.connections).toHaveLength(0);
  });

  it("a run opening whose answer is lost (the connection broke after the hand-off committed): the same process's next run delivers the job, another process's ends it uncertain", async () => {
    const ctx = { attempt: 1, finalAttempt: false, signal: new AbortController().signal, progress: async () => {} };
    /** A database that runs the next run opening's statement, then loses its answer. */
    const losingOpening = () => {
      let lose = true;
      return new Proxy(rt.services.db, {
        get: (target, prop, receiver) => (prop === 'query'
          ? async (text: string, params?: unknown[]) => {
            const result = await target.query(text, params);
            if (lose && text.includes('fl AS (SELECT (SELECT locked FROM lk)')) {
              lose = false;
              throw new Error('Connection terminated unexpectedly');
            }
            return result;
          }
          : Reflect.get(target, prop, receiver)),
      });
    };
    for (const [printer, sameProcess] of [['lost-same', true], ['lost-other', false]] as const) {
      const s = await sink();
      await addPrinter(rt, printer, s.connection, { paused: true });
      const { id } = await submit(rt, printer, `${printer} job\n`);
      await settled(rt, printer);
      await setPrinter(rt, printer, { paused: false });
      const run = dispatchHandlers({ ...rt.services, db: losingOpening() })['print.dispatch']!;
      // the run fails (no attempt spent: the database could not be reached), its job handed off and not sent
      await expect(run({ printer }, ctx)).rejects.toThrow(/cannot be reached/);
      expect((await jobs(rt, [id]))[0]).toMatchObject({ status: 'processing' });
      expect(s.connections).toHaveLength(0);
      const next = sameProcess ? run : dispatchHandlers(rt.services)['print.dispatch']!;
      await next({ printer }, ctx);
      const [job] = await until(rt, [id], ['processed', 'error']);
      if (sameProcess) {
        // before: "delivery uncertain", though nothing had been sent
        expect(job).toMatchObject({ status: 'processed' });
        expect(s.received().map(String)).toEqual([`${printer} job\n`]);
        expect(await logText(rt, id)).toMatch(/answer was lost .* nothing was sent: delivered now/);
      } else {
        expect(job).toMatchObject({ status: 'error', message: 'delivery uncertain' });
        expect(s.connections).toHaveLength(0);
      }
    }
  });

  it("the same when the opening took the transaction path (the lock busy) and its COMMIT's answer is lost: the same process's next run delivers the job", async () => {
    const ctx = { attempt: 1, finalAttempt: false, signal: new AbortController().signal, progress: async () => {} };
    let lose = true;
    // a database whose next transaction commits, then loses its answer
    const losingCommit = new Proxy(rt.services.db, {
      get: (target, prop, receiver) => (prop === 'transaction'
        ? async (fn: Parameters<typeof target.transaction>[0]) => {
          const result = await target.transaction(fn);
          if (lose) {
            lose = false;
            throw new Error('Connection terminated unexpectedly');
          }
          return result;
        }
        : Reflect.get(target, prop, receiver)),
    });
    const s = await sink();
    await addPrinter(rt, 'lost-commit', s.connection, { paused: true });
    const { id } = await submit(rt, 'lost-commit', 'lost-commit job\n');
    await settled(rt, 'lost-commit');
    await setPrinter(rt, 'lost-commit', { paused: false });
    // the printer's dispatch lock held elsewhere: the one-statement opening hands nothing off, the run waits in its transaction
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = rt.services.db.transaction(async (tx) => {
      await lockPrinterDispatch(tx, 'lost-commit');
      locked();
      await new Promise<void>((r) => (release = r));
    });
    await isLocked;
    const run = dispatchHandlers({ ...rt.services, db: losingCommit })['print.dispatch']!;
    const first = run({ printer: 'lost-commit' }, ctx);
    await new Promise((r) => setTimeout(r, 300));
    release();
    await holder;
    await expect(first).rejects.toThrow(/cannot be reached/);
    expect((await jobs(rt, [id]))[0]).toMatchObject({ status: 'processing' });
    await run({ printer: 'lost-commit' }, ctx);
    const [job] = await until(rt, [id], ['processed', 'error']);
    expect(job).toMatchObject({ status: 'processed' });
    expect(s.received().map(String)).toEqual(['lost-commit job\n']);
  });
});
