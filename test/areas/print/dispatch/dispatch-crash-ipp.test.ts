import net from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { IppEvePrinter } from '../../../helpers/ippeveprinter.js';
import { eventually } from '../../../helpers/runtime.js';
import { countReceipts, payload, repeatJob, startCrashFleet, submitAll, type CrashFleet } from './crash-fleet.js';

/**
 * A worker killed with SIGKILL while its IPP request carrying the document
 * is on its way must not leave the printer busy. The worker talks to
 * ippeveprinter through a proxy that forwards every connection except the
 * first one carrying a document (Print-Job, or Send-Document after a
 * Create-Job): that one it holds, forwarding nothing, and the test kills the
 * worker. A Create-Job forwarded before it would leave an empty job at the
 * printer (`job-data-insufficient`), which ippeveprinter never times out
 * (it advertises `multiple-operation-time-out` 60 and does not act on it):
 * every later job was answered `server-error-busy` for good (seen in CI on
 * dispatch-crash-many). The delivery caught by the kill ends "delivery
 * uncertain"; the next job prints, and the caught one, repeated, prints once.
 */

/** IPP operations that carry a document. */
const PRINT_JOB = 0x02;
const SEND_DOCUMENT = 0x06;

let fleet: CrashFleet;
let ipp: IppEvePrinter;
let proxy: net.Server;
/** Resolved once the proxy holds a connection carrying a document. */
let held: Promise<number>;
const sockets = new Set<net.Socket>();

/**
 * The IPP operation of an HTTP request's first bytes (the IPP message
 * begins the body, after a chunk-size line when chunked), or undefined
 * while they are not all here.
 */
function operationOf(head: Buffer): number | undefined {
  const end = head.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  let body = end + 4;
  if (/transfer-encoding:\s*chunked/i.test(head.subarray(0, end).toString('latin1'))) {
    const line = head.indexOf('\r\n', body);
    if (line < 0) return undefined;
    body = line + 2;
  }
  return head.length >= body + 4 ? head.readUInt16BE(body + 2) : undefined;
}

beforeAll(async () => {
  fleet = await startCrashFleet();
  ipp = await IppEvePrinter.start();
  let hold: ((op: number) => void) | undefined;
  held = new Promise((resolve) => (hold = resolve));
  proxy = net.createServer((client) => {
    sockets.add(client);
    client.on('error', () => {});
    client.on('close', () => sockets.delete(client));
    let head = Buffer.alloc(0);
    const first = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const op = operationOf(head);
      if (op === undefined) return;
      client.off('data', first);
      if (hold && (op === PRINT_JOB || op === SEND_DOCUMENT)) {
        // the first document: nothing of it reaches the printer
        hold(op);
        hold = undefined;
        client.resume();
        return;
      }
      const upstream = net.connect({ host: '127.0.0.1', port: ipp.port });
      sockets.add(upstream);
      upstream.on('error', () => client.destroy());
      upstream.on('close', () => sockets.delete(upstream));
      upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('close', () => upstream.destroy());
    };
    client.on('data', first);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
}, 180_000);

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise<void>((resolve) => (proxy ? proxy.close(() => resolve()) : resolve()));
  await fleet?.close();
  await ipp?.close();
});

it('ipp: kill -9 of the worker while its document request is on its way leaves the printer free: the next job prints, the caught one ends "delivery uncertain"', async () => {
  const { api, db } = fleet;
  const port = (proxy.address() as net.AddressInfo).port;
  expect((await api.post('/v3/printers/', { name: 'ipp', connection: `ipp://127.0.0.1:${port}/ipp/print` })).status).toBe(200);
  const first = await submitAll(api, 1, () => 'ipp');
  const caughtId = first.get('0')!;

  const worker = await fleet.startWorker();
  await held;
  worker.child.kill('SIGKILL');
  await worker.exited;

  const next = await fleet.startWorker();
  try {
    const caught = await eventually(async () => {
      const body = (await api.get(`/v3/jobs/${caughtId}`)).body as { status: string; message?: string };
      return body.status === 'error' ? body : undefined;
    }, 60_000, 100);
    expect(caught.message).toBe('delivery uncertain');

    // the printer is free: a new job prints (an empty job left at the printer would answer it server-error-busy for good)
    const res = await api.request('POST', '/v3/jobs/?printer=ipp&name=job-1', { body: payload(1), headers: { 'content-type': 'text/plain' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const after = await eventually(async () => {
      const body = (await api.get(`/v3/jobs/${res.body.id}`)).body as { status: string };
      return body.status === 'processed' || body.status === 'error' ? body : undefined;
    }, 60_000, 100).catch(async (err: Error) => {
      const log = (await api.get(`/v3/jobs/${res.body.id}/logs`)).body.map((l: { text: string }) => l.text);
      throw new Error(`${err.message}; job log: ${log.slice(-5).join(' | ')}`, { cause: err });
    });
    expect(after.status).toBe('processed');

    // the caught one, repeated by an operator, prints once; nothing printed twice
    await repeatJob(api, caughtId);
    const got = countReceipts((await ipp.documents()).map((d) => d.bytes));
    expect(Object.fromEntries(got)).toEqual({ 0: { copies: 1, whole: 1 }, 1: { copies: 1, whole: 1 } });
    expect((await db.query('SELECT count(*)::int AS n FROM print_jobs WHERE status = $1', ['processed'])).rows[0].n).toBe(2);
  } finally {
    next.child.kill('SIGKILL');
  }
}, 240_000);
