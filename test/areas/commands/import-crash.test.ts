import { readdir } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClient } from '../../helpers/client.js';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import { processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';
import { eventually } from '../../helpers/runtime.js';
import { launch } from '../../helpers/repo.js';

/**
 * Acceptance test for crash leftovers: `api` and `worker` as separate
 * processes on PostgreSQL; 100 imports from a slow source (into the blob
 * store and a filesystem repository); the worker is
 * killed with SIGKILL while several are streaming; the source then answers
 * 503. Once a new worker runs, every command reaches a final state, no
 * document is left without content and no `.part` file is left behind.
 */
const COUNT = 100;
const CHUNK = Buffer.alloc(64 * 1024, 'p');
const TOTAL = 10 * 1024 * 1024;

let pe: ProcessEnv;
let apiProc: TestProcess;
let api: TestClient;
let db: pg.Client;
let source: http.Server;
let src: string;
let failing = false;

const blobParts = async () => (await readdir(path.join(pe.dataDir, 'blobs', 'tmp')).catch(() => [] as string[])).filter((n) => n.endsWith('.part'));
const fileParts = async () => (await readdir(path.join(pe.dataDir, 'files')).catch(() => [] as string[])).filter((n) => n.endsWith('.part'));
const partFiles = async () => [...await blobParts(), ...await fileParts()];
const SERVICES = ['store', 'files'];
const count = async (sql: string) => Number((await db.query<{ n: string }>(sql)).rows[0]!.n);

beforeAll(async () => {
  source = http.createServer((req, res) => {
    if (failing) {
      res.writeHead(503, { 'retry-after': '60' });
      res.end('unavailable');
      return;
    }
    // slow: 64 KiB every 50 ms, 10 MiB in all
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': TOTAL });
    let sent = 0;
    const timer = setInterval(() => {
      if (res.destroyed || failing) {
        clearInterval(timer);
        res.destroy();
        return;
      }
      res.write(CHUNK);
      sent += CHUNK.length;
      if (sent >= TOTAL) {
        clearInterval(timer);
        res.end();
      }
    }, 50);
    res.on('close', () => clearInterval(timer));
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  src = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
  pe = await processEnv({
    commands: { importAllowPrivate: true },
    queues: { concurrency: 4, reconcileIntervalMs: 5000 },
  });
  apiProc = await startProcess('api', pe.env);
  await waitReady(apiProc.url!);
  api = new TestClient(apiProc.url!, await pe.token(apiProc.url!));
  db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
  await db.query(`SET search_path TO "${pe.schema}"`);
}, 180_000);

afterAll(async () => {
  await db?.end();
  source?.closeAllConnections();
  source?.close();
  await pe?.cleanup();
});

describe('an import crash leaves nothing behind', () => {
  it('kill -9 of the worker during 100 slow imports, then a failing source: all final, no empty document, no part file', async () => {
    const cids: string[] = [];
    // alternating between the blob store and the filesystem repository, so both are in flight at the kill
    for (let i = 0; i < COUNT; i++) cids.push(await launch(api, SERVICES[i % 2]!, 'import', { url: `${src}/slow/imp-${i}.bin` }));

    const worker = await startProcess('worker', pe.env);
    await waitLog(worker, /workers running/);
    // several imports are streaming: their documents exist without content, their part files grow
    await eventually(async () => ((await blobParts()).length >= 1 && (await fileParts()).length >= 1 ? true : undefined), 120_000, 100);
    await eventually(async () => ((await count(`SELECT count(*) AS n FROM entries WHERE parent IS NOT NULL AND sha256 IS NULL`)) >= 2 ? true : undefined), 60_000, 100);
    worker.child.kill('SIGKILL');
    await worker.exited;
    failing = true;
    const leftParts = await partFiles();
    const leftEmpty = await count(`SELECT count(*) AS n FROM entries WHERE parent IS NOT NULL AND sha256 IS NULL`);
    expect(leftParts.length).toBeGreaterThanOrEqual(2); // what the crash left: the test can fail
    expect(leftEmpty).toBeGreaterThanOrEqual(2);

    const again = await startProcess('worker', pe.env);
    await waitLog(again, /workers running/);
    // the start-up sweeps took the dead worker's part files and said so (the filesystem one runs in the background)
    expect(await blobParts()).toEqual([]);
    const fsSwept = JSON.parse(await waitLog(again, /"sid":"files".*removed part files left by stopped processes/, 30_000)) as { removed: number };
    expect(await partFiles()).toEqual([]);
    const blobSwept = JSON.parse(again.logs.find((l) => /"dir":"blobs\/tmp".*removed part files/.test(l))!) as { removed: number };
    expect(blobSwept.removed + fsSwept.removed).toBe(leftParts.length);

    // interrupted jobs come back once their locks expire (BullMQ stalled-job check): bounded generously
    await eventually(async () => ((await count(`SELECT count(*) AS n FROM commands WHERE state NOT IN ('success', 'failure')`)) === 0 ? true : undefined), 240_000, 500);
    const states = (await db.query<{ state: string; code: string | null; n: string }>(
      `SELECT state, error->>'code' AS code, count(*) AS n FROM commands GROUP BY 1, 2 ORDER BY 1, 2`,
    )).rows;
    const failures = states.filter((s) => s.state === 'failure');
    expect(failures.every((s) => s.code === 'IMPORT_FETCH_FAILED'), JSON.stringify(states)).toBe(true);
    expect(states.reduce((n, s) => n + Number(s.n), 0)).toBe(COUNT);

    // no document without content: every document left is a finished import
    expect(await count(`SELECT count(*) AS n FROM entries WHERE parent IS NOT NULL AND (sha256 IS NULL OR content_version IS NULL)`)).toBe(0);
    const successes = Number(states.find((s) => s.state === 'success')?.n ?? 0);
    expect(await count(`SELECT count(*) AS n FROM entries WHERE parent IS NOT NULL AND size = ${TOTAL}`)).toBe(successes);
    expect(await partFiles()).toEqual([]);
    // and on disk: only the complete files of successful imports
    expect((await readdir(path.join(pe.dataDir, 'files'))).length).toBe(await count(`SELECT count(*) AS n FROM entries WHERE sid = 'files' AND parent IS NOT NULL`));

    // the statuses read through the API agree (each delivered once)
    for (const [i, cid] of cids.slice(0, 6).entries()) {
      const res = await api.get(`/v1/services/${SERVICES[i % 2]}/repo/command/${cid}`);
      expect(['success', 'failure']).toContain(res.body.state);
    }
    expect(apiProc.child.exitCode).toBeNull();
    expect(again.child.exitCode).toBeNull();
  }, 600_000);
});
