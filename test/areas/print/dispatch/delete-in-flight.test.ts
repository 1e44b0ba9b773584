import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, type TestClient } from '../../../helpers/client.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { submit } from '../helpers.js';
import { FAST, jobs, until } from './harness.js';

/**
 * Deleting a job while its printer has it (issue 20, item 7). The rule: a
 * job in `processing` is being handed to its device and cannot be deleted
 * (409 JOB_IN_DELIVERY; cancel it, or wait for the outcome, then delete).
 * The engine agrees: a delivery that ends after its job left `processing`
 * and was deleted (cancel, then delete) notes that on the printer's log and
 * goes on with the next job; its run neither fails nor retries.
 */
let rt: TestRuntime;
let admin: TestClient;
const sinks: TcpSink[] = [];
beforeAll(async () => {
  // deliveries are held by the test's sink for as long as it likes: a long idle timeout
  rt = await startTestRuntime({ overrides: { printDispatch: { ...FAST, idleTimeoutMs: 120_000 }, queues: { reconcileIntervalMs: 60_000, concurrency: { default: 2, print: 4 } } } });
  admin = rt.client.withToken(await rt.token('root', ['admin']));
});
afterAll(async () => {
  await rt?.close();
  for (const s of sinks) await s.close();
});

/** A printer on a sink that holds every delivery until `release()`. */
async function heldPrinter(name: string): Promise<TcpSink> {
  const sink = await TcpSink.start({ mode: 'hold' });
  sinks.push(sink);
  const res = await admin.post('/v3/printers/', { name, connection: sink.connection });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return sink;
}

/** Submits and waits until the device has the whole document and holds it unacknowledged. */
async function inDelivery(printer: string, sink: TcpSink, body: string): Promise<string> {
  const before = sink.held().length;
  const res = await submit(admin, printer, body);
  expect(res.status).toBe(201);
  const id = String(res.body.id);
  await until(rt, [id], ['processing']);
  await eventually(async () => (sink.held().length > before ? true : undefined), 30_000);
  return id;
}

const dispatchFailures = async () => {
  const text = await (await fetch(`${rt.url}/metrics`)).text();
  return text.split('\n').filter((l) => l.includes('name="print.dispatch"') && /outcome="(failed|retried)"/.test(l) && !l.endsWith(' 0'));
};

describe('fault: deleting a job while it is delivered', { timeout: 120_000 }, () => {
  it('fault: DELETE of a job in processing answers 409 JOB_IN_DELIVERY and deletes nothing; once delivered, it deletes', async () => {
    const sink = await heldPrinter('del-busy');
    const id = await inDelivery('del-busy', sink, '%PDF-1.4 being delivered');
    expectError(await admin.delete(`/v3/jobs/${id}`), 409, 'JOB_IN_DELIVERY');
    expect((await jobs(rt, [id]))[0]?.status).toBe('processing');
    sink.release();
    await until(rt, [id], ['processed']);
    expect((await admin.delete(`/v3/jobs/${id}`)).status).toBe(200);
    expect(await jobs(rt, [id])).toEqual([]);
    expect(await dispatchFailures()).toEqual([]);
  });

  it('fault: a delivery that ends after its job was canceled and deleted: no failed dispatch run, the next job prints', async () => {
    const sink = await heldPrinter('del-canceled');
    const id = await inDelivery('del-canceled', sink, '%PDF-1.4 canceled then deleted');
    const next = await submit(admin, 'del-canceled', '%PDF-1.4 the next one');
    expect((await admin.request('PUT', `/v3/jobs/${id}/cancel`)).status).toBe(200);
    expect((await admin.delete(`/v3/jobs/${id}`)).status).toBe(200);
    sink.release();
    // the next job goes out on the same run and is acknowledged once released
    await eventually(async () => (sink.held().length > 0 ? true : undefined), 30_000);
    sink.mode = 'close';
    sink.release();
    await until(rt, [String(next.body.id)], ['processed']);
    expect(await dispatchFailures()).toEqual([]);
    const { rows } = await rt.services.db.query<{ text: string }>(`SELECT text FROM print_logs WHERE printer = 'del-canceled' AND job_id IS NULL ORDER BY id`);
    expect(rows.map((r) => r.text).join('\n')).toMatch(new RegExp(`job ${id}.*(deleted|gone)`));
  });
});
