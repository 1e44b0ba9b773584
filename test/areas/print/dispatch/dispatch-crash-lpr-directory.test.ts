import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LpdReceiver } from '../../../helpers/lpd-receiver.js';
import { eventually } from '../../../helpers/runtime.js';
import { allFinal, countReceipts, expectAtMostOnce, handedOff, leftInFlight, payload, repeatJob, startCrashFleet, submitAll, tagOf, type CrashFleet } from './crash-fleet.js';

/**
 * The crash property of dispatch-crash-many for the LPR and directory
 * backends, smaller: 480 jobs to 4 LPR printers (RFC 1179 receivers that
 * take 40 ms to acknowledge a job's control file) and 4 directory printers
 * (256 KiB jobs, each written and synced); the worker process is killed with
 * SIGKILL once while a directory job is handed off and twice while LPR jobs
 * are received whole but not acknowledged. Every job ends final, no job is
 * received twice (data files by tag at the receivers, files in the
 * directories), exactly the jobs left handed off end "delivery uncertain",
 * and a repeated one is delivered once more.
 */
const EACH = 60;
const LPR = 4;
const DIRS = 4;
const JOBS = (LPR + DIRS) * EACH;
const DIR_EXTRA = 256 * 1024;

let fleet: CrashFleet;
const lpds: LpdReceiver[] = [];
const dirs: string[] = [];

beforeAll(async () => {
  fleet = await startCrashFleet();
  for (let i = 0; i < LPR; i++) lpds.push(await LpdReceiver.start({ ackDelayMs: 40 }));
  // directory printers live under the data directory (the confinement's default root)
  for (let i = 0; i < DIRS; i++) {
    const dir = path.join(fleet.pe.dataDir, 'printers', `dir-${i}`);
    await mkdir(dir, { recursive: true });
    dirs.push(dir);
  }
}, 180_000);

afterAll(async () => {
  await fleet?.close();
  for (const r of lpds) await r.close();
});

const printerOf = (n: number) => (n % 2 === 0 ? `lpr-${(n / 2) % LPR}` : `dir-${((n - 1) / 2) % DIRS}`);
const body = (n: number) => payload(n, n % 2 === 0 ? 0 : DIR_EXTRA);

/** Data files the receivers took whole (whatever became of the control file) and the files in the directories (not the hidden temporary ones). */
async function receipts() {
  const files: Buffer[] = lpds.flatMap((r) => r.jobs.flatMap((j) => [...j.files.values()]));
  for (const dir of dirs) {
    for (const name of await readdir(dir)) if (!name.startsWith('.')) files.push(await readFile(path.join(dir, name)));
  }
  return countReceipts(files, body);
}

it('kill -9 of the worker during LPR and directory hand-offs: all final, none received twice, the ones left handed off "delivery uncertain"', async () => {
  const { api, db } = fleet;
  for (let i = 0; i < LPR; i++) expect((await api.post('/v3/printers/', { name: `lpr-${i}`, connection: lpds[i]!.connectionFor('raw') })).status).toBe(200);
  for (let i = 0; i < DIRS; i++) expect((await api.post('/v3/printers/', { name: `dir-${i}`, connection: `file://${dirs[i]}` })).status).toBe(200);
  const idOf = await submitAll(api, JOBS, printerOf, body);

  const inFlightAtKill: string[][] = [];
  const caughtLpr: string[][] = [];
  let worker = await fleet.startWorker();
  // first kill: as soon as the database shows a directory job handed off
  await eventually(async () => {
    const dirInFlight = (await handedOff(db)).filter((j) => j.printer.startsWith('dir-'));
    if (dirInFlight.length === 0) return undefined;
    worker.child.kill('SIGKILL');
    return true;
  }, 150_000, 1);
  for (const at of [-1, 40, 100]) {
    if (at >= 0) {
      // then twice in the same turn as seeing LPR jobs received whole and not acknowledged
      caughtLpr.push(await eventually(async () => {
        if (lpds.reduce((n, r) => n + r.jobs.filter((j) => j.acknowledged).length, 0) < at) return undefined;
        const tags = lpds.flatMap((r) => r.held()).map((j) => tagOf([...j.files.values()][0]!)!);
        if (tags.length === 0) return undefined;
        worker.child.kill('SIGKILL');
        return tags;
      }, 150_000, 5));
    }
    inFlightAtKill.push((await leftInFlight(db, worker)).map((j) => j.id));
    worker = await fleet.startWorker();
  }
  const final = await allFinal(db, JOBS);
  await expectAtMostOnce(fleet, final, await receipts(), idOf, inFlightAtKill);
  const errors = final.filter((r) => r.status === 'error').map((r) => r.id);
  for (const tags of caughtLpr) {
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) expect(errors).toContain(idOf.get(tag));
  }

  // an operator repeats an uncertain LPR job the receiver had whole: delivered once more
  const tag = caughtLpr[0]![0]!;
  await repeatJob(api, idOf.get(tag)!);
  expect((await receipts()).get(tag)).toEqual({ copies: 2, whole: 2 });
  const dirErrors = final.filter((r) => r.status === 'error' && r.printer.startsWith('dir-'));
  console.log(`dispatch crash (lpr, directory): ${JOBS} jobs, ${errors.length} uncertain (directory ${dirErrors.length}); `
    + `in flight at the kills: ${inFlightAtKill.map((c) => c.length).join(', ')}; LPR caught unacknowledged: ${caughtLpr.map((c) => c.length).join(', ')}`);
  worker.child.kill('SIGKILL');
}, 600_000);
