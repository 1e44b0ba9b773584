import { afterAll, beforeAll, expect, it } from 'vitest';
import { IppEvePrinter } from '../../../helpers/ippeveprinter.js';
import { eventually } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';
import { allFinal, countReceipts, dispatchJobState, expectAtMostOnce, leftInFlight, repeatJob, startCrashFleet, submitAll, tagOf, type CrashFleet } from './crash-fleet.js';

/**
 * At most once under crashes, at scale (issue 22): an `api` process and a
 * `worker` process (real entrypoints) dispatch 2,000 jobs to 20 raw-socket
 * printers and one IPP printer (CUPS's ippeveprinter); the worker is killed
 * with SIGKILL three times while hand-offs are in flight and started again.
 * Every job reaches a final state; no printer receives a job twice (each
 * job's data starts with a tag of its own, read back from the sinks'
 * connections and ippeveprinter's spool); the jobs in `error` are exactly
 * those the kills left handed off, each saying "delivery uncertain"; every
 * `processed` job was received once and whole; and `repeat` of an
 * uncertain job prints it once more.
 *
 * The socket printers take 40 ms to acknowledge a complete job (close their
 * side), so at most moments some have a job received whole and not yet
 * acknowledged; a kill is sent in the same turn of the event loop that saw
 * such jobs, so they are caught before their acknowledgement leaves.
 */
const SOCKETS = 20;
const JOBS = 2000;
/** Every 25th job goes to the IPP printer (80 jobs): it prints one job at a time and is followed by polling (~0.2-0.4 s a job). */
const IPP_EVERY = 25;
const ACK_MS = 40;
/** The kills: once this many jobs reached the socket printers (of 1,920). */
const KILL_AT = [400, 900, 1400];

let fleet: CrashFleet;
const sinks: TcpSink[] = [];
let ipp: IppEvePrinter;

beforeAll(async () => {
  fleet = await startCrashFleet();
  for (let i = 0; i < SOCKETS; i++) sinks.push(await TcpSink.start({ ackDelayMs: ACK_MS }));
  ipp = await IppEvePrinter.start();
}, 180_000);

afterAll(async () => {
  await fleet?.close();
  for (const s of sinks) await s.close();
  await ipp?.close();
});

const printerOf = (n: number) => (n % IPP_EVERY === 0 ? 'ipp' : `sock-${n % SOCKETS}`);

/** Everything the printers received (a connection cut short still shows its tag). */
const receipts = async () => countReceipts([
  ...sinks.flatMap((s) => s.connections.filter((c) => c.bytes > 0).map((c) => Buffer.concat(c.chunks))),
  ...(await ipp.documents()).map((d) => d.bytes),
]);

it('kill -9 of the worker three times while 2,000 jobs go to 20 socket printers and an IPP printer: all final, none received twice, the caught ones "delivery uncertain"', async () => {
  const t0 = performance.now();
  const { api, db } = fleet;
  for (let i = 0; i < SOCKETS; i++) {
    const res = await api.post('/v3/printers/', { name: `sock-${i}`, connection: sinks[i]!.connection });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  }
  expect((await api.post('/v3/printers/', { name: 'ipp', connection: ipp.connection })).status).toBe(200);
  // every job submitted over HTTP before any worker runs
  const idOf = await submitAll(api, JOBS, printerOf);
  const submitted = performance.now();

  // three kills, each in the same turn as seeing jobs received whole and not yet acknowledged
  const caught: string[][] = [];
  const inFlightAtKill: string[][] = [];
  let worker = await fleet.startWorker();
  for (const at of KILL_AT) {
    caught.push(await eventually(async () => {
      const received = sinks.reduce((n, s) => n + s.jobs().length, 0);
      if (received < at) return undefined;
      const tags = sinks.flatMap((s) => s.held()).map((c) => tagOf(Buffer.concat(c.chunks))!);
      if (tags.length === 0) return undefined;
      worker.child.kill('SIGKILL');
      return tags;
    }, 150_000, 5));
    inFlightAtKill.push((await leftInFlight(db, worker)).map((j) => j.id));
    worker = await fleet.startWorker();
  }
  const final = await allFinal(db, JOBS).catch(async (err: Error) => {
    // what stopped: each printer's dispatch job in BullMQ and the worker's last lines about the printers not done
    const stuck = [...new Set((err.message.match(/"([^":]+):[a-z]+":/g) ?? []).map((m) => m.slice(1, m.indexOf(':'))))];
    const jobs = await Promise.all(stuck.map((p) => dispatchJobState(fleet.pe.prefix, p)));
    const lines = worker.logs.filter((l) => stuck.some((p) => l.includes(`"${p}"`))).slice(-30);
    throw new Error([err.message, ...jobs, `worker pid ${worker.child.pid} (exit ${worker.child.exitCode ?? 'running'}), last lines about them:`, ...lines].join('\n'), { cause: err });
  });
  const finished = performance.now();

  await expectAtMostOnce(fleet, final, await receipts(), idOf, inFlightAtKill);
  const errors = final.filter((r) => r.status === 'error').map((r) => r.id);
  // each kill caught jobs received whole and unacknowledged: they are among the uncertain ones
  for (const tags of caught) {
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) expect(errors).toContain(idOf.get(tag));
  }
  // at most one job in flight per printer at each kill
  for (const ids of inFlightAtKill) expect(ids.length).toBeLessThanOrEqual(SOCKETS + 1);

  // an operator repeats one the printer did receive whole: it prints once more, and nothing else does
  const tag = caught[0]![0]!;
  await repeatJob(api, idOf.get(tag)!);
  const after = await receipts();
  expect(after.get(tag)).toEqual({ copies: 2, whole: 2 });
  expect([...after].filter(([t, r]) => t !== tag && r.copies > 1)).toEqual([]);

  const ippInFlight = inFlightAtKill.map((ids) => final.filter((r) => ids.includes(r.id) && r.printer === 'ipp').length);
  console.log(`dispatch crash: ${JOBS} jobs (${final.length - errors.length} processed, ${errors.length} uncertain; caught unacknowledged at the kills: ${caught.map((c) => c.length).join(', ')}; `
    + `in flight at the kills: ${inFlightAtKill.map((c) => c.length).join(', ')}, of which IPP ${ippInFlight.join(', ')}); `
    + `submitted in ${((submitted - t0) / 1000).toFixed(1)} s, all final after ${((finished - submitted) / 1000).toFixed(1)} s more`);
  worker.child.kill('SIGKILL');
}, 600_000);
