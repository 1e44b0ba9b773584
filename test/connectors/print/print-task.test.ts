import { PDFDocument } from 'pdf-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestClient } from '../../helpers/client.js';
import { IppEvePrinter } from '../../helpers/ippeveprinter.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { TcpSink } from '../../helpers/tcp-sink.js';
import { AREAS } from '../../../src/areas/index.js';
import { reconcile } from '../../../src/worker/reconciler.js';
import { printPort } from '../../../src/runtime/print-port.js';
import { act, entryOf, getTask, itemWhen, jobsOf, printTask, storeDocument, taskWhen, watchStates } from './helpers.js';

/**
 * The `print` task connector end to end (issue 22, item 4) on a real
 * runtime (PostgreSQL, Redis, workers) with real printers: raw-socket sinks
 * that hold each job until the test acknowledges it (so every state is
 * reached in a known order, not by timing) and a real IPP printer
 * (ippeveprinter) that refuses a format.
 */
let rt: TestRuntime;
let admin: TestClient;
const sinks: TcpSink[] = [];
const ipps: IppEvePrinter[] = [];

beforeAll(async () => {
  // no periodic reconcile pass: the lost-report test runs its own and counts what it repaired
  rt = await startTestRuntime({ overrides: { queues: { reconcileIntervalMs: 3_600_000 } } });
  admin = rt.client.withToken(await rt.token('admin', ['admin']));
});
afterAll(async () => {
  for (const s of sinks) await s.close();
  for (const p of ipps) await p.close();
  await rt?.close();
});

/** A raw-socket printer that holds every job until `release` (a device that has not yet acknowledged). */
async function heldPrinter(name: string): Promise<TcpSink> {
  const sink = await TcpSink.start({ mode: 'hold' });
  sinks.push(sink);
  const res = await admin.post('/v3/printers/', { name, connection: sink.connection });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return sink;
}

/** Acknowledges the one job the sink holds (waits until it has it whole, then until the connection is closed). */
async function ackOne(sink: TcpSink): Promise<void> {
  const before = sink.jobs().length;
  await eventually(async () => (sink.held().length === 1 ? true : undefined));
  sink.release();
  await eventually(async () => (sink.jobs().length > before ? true : undefined));
}

/** A one-page PDF saying `n` (real PDFs: the store makes previews of them). */
const pdfs = new Map<string, Buffer>();
async function makePdf(n: string): Promise<Buffer> {
  const doc = await PDFDocument.create();
  doc.addPage([200, 100]).drawText(n, { x: 20, y: 40 });
  const bytes = Buffer.from(await doc.save({ useObjectStreams: false }));
  pdfs.set(n, bytes);
  return bytes;
}
const pdf = (n: string): string => String(pdfs.get(n));
const stored = async (n: string) => storeDocument(admin, `${n}.pdf`, await makePdf(n));

/**
 * A started task of one stored PDF per name on a held printer of its own: the first is being delivered
 * (the printer has not acknowledged it), the others wait behind it.
 */
async function deliveringFirst(printer: string, task: string, names: string[]) {
  const p = await heldPrinter(printer);
  const docs = await Promise.all(names.map(stored));
  const { tid, items } = await printTask(admin, task, docs.map((href) => ({ href, metadata: { printer } })));
  await act(admin, tid, 'start');
  await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processing');
  for (const item of items.slice(1)) await itemWhen(admin, tid, item, (e) => e.state === 'waitprocessing');
  return { p, tid, items };
}

/** The order a job's states come in when nothing goes wrong; a state seen must never come before one seen earlier. */
const ORDER = ['submitting', 'waitprocessing', 'processing', 'processed'];

// each test waits for several jobs to move through the real dispatch engine on a machine shared with other suites
describe('print task connector', { timeout: 90_000 }, () => {
  it('3 documents on 2 printers: cstats shows each job moving through its states in order, the task completes', async () => {
    const a = await heldPrinter('print-task A');
    const b = await heldPrinter('print-task B');
    const docs = [await stored('one'), await stored('two'), await stored('three')];
    const { tid, items } = await printTask(admin, 'three documents', [
      { href: docs[0]!, metadata: { printer: 'print-task A', copies: 2 } },
      { href: docs[1]!, metadata: { printer: 'print-task B' } },
      { href: docs[2]!, metadata: { printer: 'print-task A', priority: 60 } },
    ]);
    const watch = watchStates(admin, tid);
    let aFirst: string[];
    try {
      await act(admin, tid, 'start');
      // A prints one while the other waits behind it; B prints its one. Which goes first on A depends on
      // whether A's dispatch run took items[0]'s job before items[2]'s was submitted (the items are submitted
      // one after another): if both were waiting by then, the priority-60 one (items[2]) goes first
      await itemWhen(admin, tid, items[1]!, (e) => e.state === 'processing');
      aFirst = await eventually(async () => {
        const t = await getTask(admin, tid);
        const [s0, s2] = [entryOf(t.cstats, items[0]!)?.state, entryOf(t.cstats, items[2]!)?.state];
        if (s0 === 'processing' && s2 === 'waitprocessing') return [items[0]!, items[2]!];
        if (s2 === 'processing' && s0 === 'waitprocessing') return [items[2]!, items[0]!];
        return undefined;
      });
      expect((await getTask(admin, tid)).status).toBe('processing');
      await ackOne(a);
      await itemWhen(admin, tid, aFirst[0]!, (e) => e.state === 'processed');
      await itemWhen(admin, tid, aFirst[1]!, (e) => e.state === 'processing');
      await ackOne(b);
      await itemWhen(admin, tid, items[1]!, (e) => e.state === 'processed');
      expect((await getTask(admin, tid)).status).toBe('processing');
      await ackOne(a);
      await taskWhen(admin, tid, 'completed');
    } catch (err) {
      await watch.stop(); // no poll left running against a runtime that closes
      throw err;
    }
    const seen = await watch.stop();
    const done = await getTask(admin, tid);

    // each item: one cstats entry naming its job, states only forward, ending processed
    for (const item of items) {
      const e = entryOf(done.cstats, item)!;
      expect(e).toMatchObject({ state: 'processed', href: expect.stringMatching(/^\/v3\/jobs\/\d+$/), message: expect.stringMatching(/^printed on "print-task [AB]"$/) });
      const states = seen.get(item)!;
      expect(states.at(-1)).toBe('processed');
      const at = states.map((st) => ORDER.indexOf(st));
      expect(at.every((i) => i >= 0), states.join(' -> ')).toBe(true);
      expect(at, states.join(' -> ')).toEqual([...at].sort((x, y) => x - y));
    }
    expect(Object.keys(done.cstats)).toHaveLength(3);
    // the jobs: one per item, from the task, with the documents' names and the settings from the metadata
    const jobs = await jobsOf(admin, tid);
    expect(jobs).toHaveLength(3);
    const byItem = new Map(jobs.map((j) => [j.task.item, j]));
    expect(byItem.get(items[0]!)).toMatchObject({ status: 'processed', printer: 'print-task A', fileName: 'one.pdf', copies: 2, checkin: { type: 'task', source: `/v1/services/print/tasks/${tid}` }, task: { sid: 'print', tid, item: items[0], run: 1 } });
    expect(byItem.get(items[1]!)).toMatchObject({ status: 'processed', printer: 'print-task B', fileName: 'two.pdf' });
    expect(byItem.get(items[2]!)).toMatchObject({ status: 'processed', printer: 'print-task A', fileName: 'three.pdf', priority: 60 });
    for (const item of items) expect(entryOf(done.cstats, item)!.href).toBe(`/v3/jobs/${byItem.get(item)!.id}`);
    // the devices got the documents, each once
    const docOf = new Map([[items[0]!, pdf('one')], [items[2]!, pdf('three')]]);
    expect(a.received().map(String)).toEqual(aFirst.map((item) => docOf.get(item)));
    expect(b.received().map(String)).toEqual([pdf('two')]);
  });

  it('abort in the middle: the jobs not yet printed are canceled, the one being delivered finishes and its item says so', async () => {
    const { p, tid, items } = await deliveringFirst('print-task abort', 'four documents', ['a', 'b', 'c', 'd']);
    await act(admin, tid, 'abort');
    for (const item of items.slice(1)) {
      await itemWhen(admin, tid, item, (e) => e.state === 'canceled' && e.message === 'canceled: the task was aborted');
    }
    const delivering = await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processing' && /cannot be canceled/.test(e.message ?? ''));
    expect(delivering.message).toBe('being delivered on "print-task abort" when the task was aborted: it cannot be canceled');
    expect((await getTask(admin, tid)).status).toBe('aborted');
    await ackOne(p);
    await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processed' && /could not be canceled/.test(e.message ?? ''));
    const jobs = await jobsOf(admin, tid);
    expect(jobs.map((j) => [j.task.item, j.status]).sort()).toEqual(items.map((i, k) => [i, k === 0 ? 'processed' : 'canceled']).sort());
    expect((await getTask(admin, tid)).status).toBe('aborted');
    // nothing else reached the printer
    await new Promise((r) => setTimeout(r, 300));
    expect(p.received().map(String)).toEqual([pdf('a')]);
  });

  it('a document a printer refuses fails the task, the item naming the job and the reason; the other item prints', async () => {
    const ipp = await IppEvePrinter.start({ formats: ['application/pdf'] });
    ipps.push(ipp);
    expect((await admin.post('/v3/printers/', { name: 'print-task ipp', connection: ipp.connection })).status).toBe(200);
    const photo = await storeDocument(admin, 'photo.jpg', Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1]), 'image/jpeg');
    const letter = await stored('letter');
    const { tid, items } = await printTask(admin, 'one refused', [
      { href: letter, metadata: { printer: 'print-task ipp' } },
      { href: photo, metadata: { printer: 'print-task ipp' } },
    ]);
    await act(admin, tid, 'start');
    const failed = await taskWhen(admin, tid, 'failed', 60_000);
    const jobs = await jobsOf(admin, tid);
    const photoJob = jobs.find((j) => j.task.item === items[1])!;
    expect(photoJob).toMatchObject({ status: 'error', fileName: 'photo.jpg' });
    expect(entryOf(failed.cstats, items[1]!)).toMatchObject({
      state: 'error', href: `/v3/jobs/${photoJob.id}`,
      message: expect.stringMatching(new RegExp(`^print job ${photoJob.id} failed on "print-task ipp": .*format`)),
    });
    expect(entryOf(failed.cstats, items[0]!)).toMatchObject({ state: 'processed' });
    expect((await ipp.documents()).map((d) => String(d.bytes))).toEqual([pdf('letter')]);
  });

  it('pause holds the waiting jobs (the one being delivered finishes), resume prints the rest; one job per item', async () => {
    const { p, tid, items } = await deliveringFirst('print-task pause', 'paused', ['p1', 'p2', 'p3']);
    await act(admin, tid, 'pause');
    // the job's own report ("held on …"), not the pause's mark of every open item (state paused, "task paused"), which comes first
    for (const item of items.slice(1)) await itemWhen(admin, tid, item, (e) => e.state === 'paused' && /^held on /.test(e.message ?? ''));
    await itemWhen(admin, tid, items[0]!, (e) => /cannot be held/.test(e.message ?? ''));
    await ackOne(p);
    await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processed');
    expect((await jobsOf(admin, tid)).filter((j) => j.status === 'paused')).toHaveLength(2);
    expect((await getTask(admin, tid)).status).toBe('paused');
    await act(admin, tid, 'resume');
    await ackOne(p);
    await ackOne(p);
    const done = await taskWhen(admin, tid, 'completed');
    for (const item of items) expect(entryOf(done.cstats, item)).toMatchObject({ state: 'processed' });
    const jobs = await jobsOf(admin, tid);
    expect(jobs.map((j) => j.task.item).sort()).toEqual([...items].sort());
    expect(jobs.every((j) => j.status === 'processed')).toBe(true);
    expect(p.received().map(String)).toEqual([pdf('p1'), pdf('p2'), pdf('p3')]);
  });

  it('pause, resume, pause, resume, pause in quick succession: the hooks (run in any order) leave the jobs as the last action says', async () => {
    const { p, tid, items } = await deliveringFirst('print-task toggles', 'toggled', ['t1', 't2', 't3', 't4']);
    for (const action of ['pause', 'resume', 'pause', 'resume', 'pause']) await act(admin, tid, action);
    const waiting = async () => (await jobsOf(admin, tid)).filter((j) => j.task.item !== items[0]);
    // settled: nothing owed, no hook (nor any other task job) queued or running, the jobs held
    await eventually(async () => {
      const owed = (await rt.services.db.query<{ hook_due: string | null }>('SELECT hook_due FROM tasks WHERE tid = $1', [tid])).rows[0]!.hook_due;
      const tasks = (await rt.services.queue.depths()).tasks;
      const idle = ['waiting', 'active', 'delayed', 'prioritized'].every((k) => !tasks[k]);
      return owed === null && idle && (await waiting()).every((j) => j.status === 'paused') ? true : undefined;
    });
    expect((await waiting()).map((j) => j.status)).toEqual(['paused', 'paused', 'paused']);
    // the one on its way finishes; the held ones do not move
    await ackOne(p);
    await new Promise((r) => setTimeout(r, 300));
    expect((await waiting()).map((j) => j.status)).toEqual(['paused', 'paused', 'paused']);
    await act(admin, tid, 'resume');
    for (let i = 0; i < 3; i++) await ackOne(p);
    await taskWhen(admin, tid, 'completed');
    expect(p.received().map(String).sort()).toEqual(['t1', 't2', 't3', 't4'].map(pdf).sort());
  });

  it('a hook that read the task before a later action does not act after it: a resume read before a pause releases nothing', async () => {
    const { p, tid, items } = await deliveringFirst('print-task guard', 'guarded', ['g1', 'g2']);
    await act(admin, tid, 'pause');
    // the pause hook has held the waiting job
    const job = await eventually(async () => (await jobsOf(admin, tid)).find((j) => j.task.item === items[1] && j.status === 'paused'));
    const port = printPort(() => rt.services);
    // the operation of a resume hook that read the task while it was processing, now that the pause committed
    expect(await port.release(String(job.id), 'print:test', { tid, status: 'processing' })).toBe('unchanged');
    expect((await admin.get(`/v3/jobs/${job.id}`)).body.status).toBe('paused');
    // and the pause hook's own operation, for the status the task has, does act
    expect(await port.release(String(job.id), 'print:test', { tid, status: 'paused' })).toBe('changed');
    expect(await port.hold(String(job.id), 'print:test', { tid, status: 'paused' })).toBe('changed');
    await act(admin, tid, 'resume');
    await ackOne(p);
    await ackOne(p);
    await taskWhen(admin, tid, 'completed');
    expect(p.received().map(String)).toEqual([pdf('g1'), pdf('g2')]);
  });

  it('a state report lost with Redis: the reconciler reports the job\'s state to its item again', async () => {
    const p = await heldPrinter('print-task lost report');
    const { tid, items } = await printTask(admin, 'lost report', [{ href: await stored('lost'), metadata: { printer: 'print-task lost report' } }]);
    await act(admin, tid, 'start');
    await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processing');
    // every report of the job's changes so far has run: one still on its way (the job changed
    // three times, and any of its reports reads the present state) would undo the loss made below
    const [job] = await jobsOf(admin, tid);
    await eventually(async () => {
      const { rows } = await rt.services.db.query<{ n: string }>('SELECT count(*) AS n FROM outbox WHERE job_id LIKE $1', [`print.task-report.${job!.id}.%`]);
      const tasks = (await rt.services.queue.depths()).tasks;
      return Number(rows[0]!.n) === 0 && ['waiting', 'active', 'delayed', 'prioritized'].every((k) => !tasks[k]) ? true : undefined;
    });
    // the item as it was before the report of `processing` (that job gone with Redis, say)
    await rt.services.db.query("UPDATE task_items SET state = 'waitprocessing' WHERE tid = $1", [tid]);
    expect(entryOf((await getTask(admin, tid)).cstats, items[0]!)!.state).toBe('waitprocessing');
    const counts = await reconcile(rt.services, AREAS);
    expect(counts['print-jobs']?.enqueued).toBeGreaterThanOrEqual(1);
    await itemWhen(admin, tid, items[0]!, (e) => e.state === 'processing');
    await ackOne(p);
    await taskWhen(admin, tid, 'completed');
  });

  it('an item without a usable printer fails naming the metadata key; an unknown printer fails naming it', async () => {
    const doc = await stored('x');
    const { tid, items } = await printTask(admin, 'bad settings', [
      { href: doc, metadata: { printer: 'no such printer' } },
      { href: doc, metadata: { printer: 'print-task A', copies: 0 } },
    ]);
    await act(admin, tid, 'start');
    const failed = await taskWhen(admin, tid, 'failed');
    expect(entryOf(failed.cstats, items[0]!)).toMatchObject({ state: 'failed', message: 'no printer named "no such printer"' });
    expect(entryOf(failed.cstats, items[1]!)).toMatchObject({ state: 'failed', message: 'metadata "copies" must be a whole number from 1 to 9999' });
    expect(await jobsOf(admin, tid)).toEqual([]);
  });
});
