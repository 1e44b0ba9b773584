import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL, uniqueName } from '../../helpers/env.js';
import { tempDir } from '../../helpers/fs.js';
import { killAll, startProcess, waitLog, type TestProcess } from '../../helpers/process.js';
import { dropQueues, eventually } from '../../helpers/runtime.js';

/**
 * The acceptance test of single-instance connectors: a mock service whose
 * intake writes a heartbeat naming its process, run by three real `worker`
 * processes on one PostgreSQL schema. Exactly one writes heartbeats; after
 * `kill -9` of that one, another takes over within seconds.
 */
const schema = uniqueName('lease');
const prefix = uniqueName('lease');
const LEASE_TTL_MS = 5000;
const BEAT_MS = 200;
let dir: string;
let db: pg.Client;
const workers: TestProcess[] = [];

interface Beat { key: string; pid: number; updated: Date }

async function beats(): Promise<Beat[]> {
  const { rows } = await db.query<{ key: string; value: { pid: number }; updated: Date }>(
    `SELECT key, value, updated FROM "${schema}".connector_state WHERE sid = 'beat' AND key LIKE 'heartbeat/%' ORDER BY key`,
  );
  return rows.map((r) => ({ key: r.key, pid: r.value.pid, updated: r.updated }));
}

/** The pids whose heartbeat moved during `ms` (each compared with its own earlier row). */
async function activeDuring(ms: number): Promise<number[]> {
  const before = new Map((await beats()).map((b) => [b.key, b.updated.getTime()]));
  await new Promise((r) => setTimeout(r, ms));
  return (await beats()).filter((b) => b.updated.getTime() > (before.get(b.key) ?? 0)).map((b) => b.pid);
}

beforeAll(async () => {
  dir = await tempDir('wcr-lease-');
  const config = path.join(dir, 'config.yaml');
  await writeFile(config, [
    'database:',
    `  url: ${TEST_DATABASE_URL}`,
    `  schema: ${schema}`,
    'redis:',
    `  prefix: ${prefix}`,
    'services:',
    '  beat:',
    '    type: mock',
    '    options:',
    `      heartbeat: { intervalMs: ${BEAT_MS} }`,
    '      singleInstance: true',
    `      leaseTtlMs: ${LEASE_TTL_MS}`,
    '',
  ].join('\n'));
  for (let i = 0; i < 3; i++) workers.push(await startProcess('worker', { DATA_DIR: path.join(dir, 'data'), CONFIG: config }));
  await Promise.all(workers.map((w) => waitLog(w, /workers running/)));
  db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
}, 180_000);

afterAll(async () => {
  killAll();
  await db?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await db?.end();
  await dropQueues(prefix);
});

const pids = () => workers.filter((w) => w.child.exitCode === null && w.child.signalCode === null).map((w) => w.child.pid!);

describe('single-instance connector in three worker processes', () => {
  let holder: number;

  it('runs in exactly one of them', async () => {
    holder = (await eventually(async () => (await beats())[0], 60_000)).pid;
    expect(pids()).toContain(holder);
    // several lease renewals long: one process beats, nobody else ever wrote a beat
    expect(await activeDuring(2 * LEASE_TTL_MS)).toEqual([holder]);
    expect((await beats()).map((b) => b.pid)).toEqual([holder]);
    const { rows } = await db.query<{ holder: string }>(`SELECT holder FROM "${schema}".connector_leases WHERE name = 'service:beat'`);
    expect(rows[0]!.holder).toMatch(new RegExp(`:${holder}:[0-9a-f]{8}$`));
    const waiting = workers.filter((w) => w.child.pid !== holder);
    for (const w of waiting) expect(w.logs.some((l) => /waiting for the lease/.test(l))).toBe(true);
  }, 60_000);

  it('fencing: a holder paused (SIGSTOP) past its lease writes nothing once another process took over', async () => {
    const proc = workers.find((w) => w.child.pid === holder)!;
    const oldKey = (await beats()).find((b) => b.pid === holder)!.key;
    proc.child.kill('SIGSTOP');
    const next = await eventually(async () => (await beats()).find((b) => b.pid !== holder), 60_000, 50);
    const { rows } = await db.query<{ acquired: Date }>(`SELECT acquired FROM "${schema}".connector_leases WHERE name = 'service:beat'`);
    const takenOver = rows[0]!.acquired.getTime();
    // resumed: every timer of the old holder is overdue, its next heartbeat before its watchdog
    proc.child.kill('SIGCONT');
    await new Promise((r) => setTimeout(r, 3000));
    const old = (await beats()).find((b) => b.key === oldKey)!;
    expect(old.updated.getTime()).toBeLessThan(takenOver);
    expect(proc.child.exitCode).toBeNull();
    expect(await activeDuring(2 * LEASE_TTL_MS)).toEqual([next.pid]);
    holder = next.pid;
    // the next tests read "a beat of another pid" as the takeover: the paused process's old beat goes
    await db.query(`DELETE FROM "${schema}".connector_state WHERE sid = 'beat' AND key = $1`, [oldKey]);
  }, 90_000);

  it('moves to another process within seconds of kill -9 of the holder', async () => {
    const proc = workers.find((w) => w.child.pid === holder)!;
    const killedAt = Date.now();
    proc.child.kill('SIGKILL');
    await proc.exited;
    const next = await eventually(async () => (await beats()).find((b) => b.pid !== holder), 60_000, 50);
    const takeoverMs = Date.now() - killedAt;
    console.info(`single-instance takeover after kill -9: ${takeoverMs} ms (lease TTL ${LEASE_TTL_MS} ms)`);
    expect(pids()).toContain(next.pid);
    expect(takeoverMs).toBeLessThan(20_000);
    // and again exactly one runs it: the new holder
    expect(await activeDuring(2 * LEASE_TTL_MS)).toEqual([next.pid]);
    holder = next.pid;
  }, 90_000);

  it('a SIGTERM of the holder hands the lease over without waiting for it to expire', async () => {
    const proc = workers.find((w) => w.child.pid === holder)!;
    const stoppedAt = Date.now();
    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    const last = await eventually(async () => (await beats()).find((b) => b.pid !== holder && !workers.some((w) => w.child.pid === b.pid && w.child.signalCode)), 60_000, 50);
    const handoverMs = Date.now() - stoppedAt;
    console.info(`single-instance handover after SIGTERM: ${handoverMs} ms`);
    expect(pids()).toEqual([last.pid]);
    expect(await activeDuring(LEASE_TTL_MS)).toEqual([last.pid]);
  }, 90_000);
});
