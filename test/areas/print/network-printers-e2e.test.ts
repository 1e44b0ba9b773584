import { afterAll, beforeAll, expect, it } from 'vitest';
import { TestClient } from '../../helpers/client.js';
import { IppEvePrinter } from '../../helpers/ippeveprinter.js';
import { LpdReceiver } from '../../helpers/lpd-receiver.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';
import { eventually } from '../../helpers/runtime.js';
import { pp, submit } from './helpers.js';

/**
 * IPP and LPR printers end to end, with a real server process (role all):
 * a job submitted over /v3 reaches CUPS's ippeveprinter or an RFC 1179
 * receiver on loopback, ends `processed`, and its log tells what the device
 * said; a device check is stored on the printer; a job canceled while at an
 * IPP printer is canceled there.
 */
let pe: ProcessEnv;
let proc: TestProcess;
let api: TestClient;
const ipp: IppEvePrinter[] = [];
let lpd: LpdReceiver | undefined;

beforeAll(async () => {
  pe = await processEnv({ printDispatch: { retryBaseMs: 200, retryMaxMs: 1000, connectTimeoutMs: 2000, idleTimeoutMs: 5000 } });
  proc = await startProcess('all', pe.env);
  await waitReady(proc.url!);
  api = new TestClient(proc.url!, await pe.token(proc.url!));
}, 180_000);
afterAll(async () => {
  await pe?.cleanup();
  for (const p of ipp) await p.close();
  await lpd?.close();
});

const statusOf = async (id: number, want: string) =>
  eventually(async () => {
    const res = await api.get(`/v3/jobs/${id}`);
    return res.body.status === want ? res.body : undefined;
  }, 60_000, 100);
const logOf = async (id: number): Promise<string[]> => (await api.get(`/v3/jobs/${id}/logs`)).body.map((l: { text: string }) => l.text);

it('ipp: a job submitted over /v3 to ippeveprinter ends processed, its document in the spool, the job-state-reasons in its log', async () => {
  const printer = await IppEvePrinter.start();
  ipp.push(printer);
  expect((await api.post('/v3/printers/', { name: 'ipp-e2e', connection: printer.connection })).status).toBe(200);
  const job = await submit(api, 'ipp-e2e', '%PDF-1.4 over ipp', { name: 'ipp.pdf' });
  expect(job.status).toBe(201);
  await statusOf(job.body.id, 'processed');
  const docs = await printer.documents();
  expect(docs.map((d) => String(d.bytes))).toEqual(['%PDF-1.4 over ipp']);
  expect((await printer.attributesOf(docs[0]!.name)).get('CONTENT_TYPE')).toBe('application/pdf');
  const log = await logOf(job.body.id);
  expect(log.some((l) => /accepted the document as job \d+/.test(l))).toBe(true);
  expect(log.some((l) => l.includes('completed (job-completed-successfully)'))).toBe(true);
  // the device check through Get-Printer-Attributes, stored on the printer
  const checked = await api.put(`${pp('ipp-e2e')}/checkPhysical`);
  expect(checked.status).toBe(200);
  expect(JSON.stringify(checked.body)).toContain('Example Printer');
}, 120_000);

it('ipp: a job canceled while the printer prints it is canceled there (Cancel-Job), noted in its log', async () => {
  const printer = await IppEvePrinter.start({ printSeconds: 4 });
  ipp.push(printer);
  expect((await api.post('/v3/printers/', { name: 'ipp-cancel', connection: printer.connection })).status).toBe(200);
  const job = await submit(api, 'ipp-cancel', '%PDF-1.4 cancel me');
  await eventually(async () => ((await logOf(job.body.id)).some((l) => l.includes('processing (job-printing)')) ? true : undefined), 60_000, 50);
  expect((await api.put(`/v3/jobs/${job.body.id}/cancel`)).body.status).toBe('canceled');
  const log = await eventually(async () => {
    const lines = await logOf(job.body.id);
    return lines.some((l) => l.includes('Cancel-Job')) ? lines : undefined;
  }, 30_000, 100);
  expect(log.find((l) => l.includes('Cancel-Job'))).toContain('successful-ok');
  expect((await api.get(`/v3/jobs/${job.body.id}`)).body.status).toBe('canceled');
}, 120_000);

it('lpr: a job submitted over /v3 to an LPD ends processed, received once with its control file', async () => {
  lpd = await LpdReceiver.start({ queues: ['office'] });
  expect((await api.post('/v3/printers/', { name: 'lpr-e2e', connection: lpd.connectionFor('office') })).status).toBe(200);
  const job = await submit(api, 'lpr-e2e', '%PDF-1.4 over lpr', { name: 'lpr.pdf' });
  const done = await statusOf(job.body.id, 'processed');
  expect(done.status).toBe('processed');
  expect(lpd.received().map(String)).toEqual(['%PDF-1.4 over lpr']);
  expect(lpd.jobs[0]!.control).toMatch(/^Jlpr\.pdf$/m);
  expect((await logOf(job.body.id)).some((l) => l.includes('control file acknowledged'))).toBe(true);
}, 120_000);
