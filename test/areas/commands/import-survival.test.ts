import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PART_OWNER } from '../../../src/blobs/part-files.js';
import { TestClient } from '../../helpers/client.js';
import { processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../../helpers/process.js';
import { finish, launch, rootNames } from '../../helpers/repo.js';

/**
 * No input may end a process. A real `all` process gets hostile imports, each
 * failing somewhere between the response headers and the first byte written
 * (name clashes found late, names the file system refuses) or during the
 * transfer (resets, short bodies, garbage, stalls, redirect loops). Each must
 * end as a failed command with a stable code; afterwards the process still
 * answers /readyz and a normal import succeeds.
 */
let pe: ProcessEnv;
let proc: TestProcess;
let api: TestClient;
let source: http.Server;
let src: string;
const BODY = Buffer.alloc(64 * 1024, 'x');

beforeAll(async () => {
  source = http.createServer((req, res) => {
    const url = req.url ?? '';
    if (url.startsWith('/file/')) {
      res.writeHead(200, { 'content-type': 'text/plain', 'content-length': BODY.length });
      res.end(BODY);
    } else if (url.startsWith('/slow/')) {
      // a large body in small, slow pieces: still in flight when the import fails
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 100 * BODY.length });
      let n = 0;
      const timer = setInterval(() => (n++ === 100 || res.destroyed ? (clearInterval(timer), res.end()) : res.write(BODY)), 10);
    } else if (url.startsWith('/reset/')) {
      res.writeHead(200, { 'content-type': 'application/pdf', 'content-length': 1_000_000 });
      res.write(BODY);
      setTimeout(() => res.destroy(), 30);
    } else if (url.startsWith('/short/')) {
      res.writeHead(200, { 'content-length': 1_000_000 });
      res.write(BODY);
      setTimeout(() => res.socket?.end(), 30);
    } else if (url.startsWith('/garbage/')) {
      res.socket?.end('NOT HTTP AT ALL\r\n\r\n');
    } else if (url.startsWith('/hang/')) {
      res.writeHead(200, { 'content-length': 10 });
      res.write('12345'); // and never the rest
    } else if (url.startsWith('/silent/')) {
      // no answer at all
    } else if (url.startsWith('/loop/')) {
      res.writeHead(302, { location: url });
      res.end();
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((r) => source.listen(0, '127.0.0.1', r));
  src = `http://127.0.0.1:${(source.address() as AddressInfo).port}`;
  pe = await processEnv({ commands: { importAllowPrivate: true, importTimeoutMs: 10_000 }, queues: { concurrency: 8 } });
  proc = await startProcess('all', pe.env);
  await waitReady(proc.url!);
  api = new TestClient(proc.url!, await pe.token(proc.url!));
}, 180_000);

afterAll(async () => {
  source?.closeAllConnections();
  source?.close();
  await pe?.cleanup();
});

describe('hostile imports do not end the process', () => {
  it('late name clashes and names the file system refuses fail their commands; the process lives', async () => {
    const runs: [string, string, string][] = []; // [label, sid, cid]
    const outcomes = new Map<string, string>();
    for (const sid of ['store', 'files']) {
      const first = await finish(api, sid, await launch(api, sid, 'import', { url: `${src}/file/twice.txt` }));
      outcomes.set(`${sid} first`, first.state);
      runs.push([`${sid} same URL again`, sid, await launch(api, sid, 'import', { url: `${src}/file/twice.txt` })]);
      // several at once with one name: the clash is found only when the entry is created, mid-transfer
      for (let i = 0; i < 4; i++) runs.push([`${sid} race ${i}`, sid, await launch(api, sid, 'import', { url: `${src}/slow/race.bin` })]);
    }
    // valid names in general, refused by the file system after the source answered
    runs.push(['files: 400 bytes', 'files', await launch(api, 'files', 'import', { url: `${src}/file/${encodeURIComponent('é'.repeat(200))}` })]);
    runs.push(['files: part name', 'files', await launch(api, 'files', 'import', { url: `${src}/slow/x`, name: `.wcr-${PART_OWNER}.00000000-0000-4000-8000-000000000000.part` })]);
    for (const [label, sid, cid] of runs) {
      const done = await finish(api, sid, cid);
      outcomes.set(label, done.state === 'success' ? 'success' : done.error!.code);
    }
    expect(outcomes.get('store first')).toBe('success');
    expect(outcomes.get('files first')).toBe('success');
    expect(outcomes.get('store same URL again')).toBe('NAME_EXISTS');
    expect(outcomes.get('files same URL again')).toBe('NAME_EXISTS');
    for (const sid of ['store', 'files']) {
      const race = [0, 1, 2, 3].map((i) => outcomes.get(`${sid} race ${i}`));
      expect(race.filter((o) => o === 'success'), `${sid}: ${race.join(', ')}`).toHaveLength(1);
      expect(race.filter((o) => o === 'NAME_EXISTS')).toHaveLength(3);
    }
    expect(outcomes.get('files: 400 bytes')).toBe('INVALID_NAME');
    expect(outcomes.get('files: part name')).toBe('INVALID_NAME');
    expect(await rootNames(api, 'files')).toEqual(['race.bin', 'twice.txt']);
    expect(proc.child.exitCode).toBeNull();
  }, 240_000);

  it('transfers that break, stall, loop or are not HTTP fail with IMPORT_FETCH_FAILED and plain messages', async () => {
    const runs: [string, string][] = [];
    for (const sid of ['store', 'files']) {
      for (const kind of ['reset', 'short', 'garbage', 'hang', 'silent', 'loop']) {
        runs.push([sid, await launch(api, sid, 'import', { url: `${src}/${kind}/${kind}.bin` })]);
      }
    }
    for (const [sid, cid] of runs) {
      const done = await finish(api, sid, cid);
      expect(done.state).toBe('failure');
      expect(done.error?.code, done.error?.message).toBe('IMPORT_FETCH_FAILED');
      expect(done.error?.message).not.toMatch(/Error|UND_|ECONN|socket|other side/i);
    }
    for (const sid of ['store', 'files']) {
      expect((await rootNames(api, sid)).filter((n) => !['race.bin', 'twice.txt'].includes(n))).toEqual([]);
    }
    expect(proc.child.exitCode).toBeNull();
  }, 240_000);

  it('afterwards the process is ready and imports normally; it never logged an uncaught error', async () => {
    const ready = await fetch(`${proc.url}/readyz`);
    expect(ready.status).toBe(200);
    const done = await finish(api, 'files', await launch(api, 'files', 'import', { url: `${src}/file/after.txt` }));
    expect(done.state).toBe('success');
    expect(proc.child.exitCode).toBeNull();
    expect(proc.logs.filter((l) => /uncaught|unhandled/i.test(l))).toEqual([]);
  }, 120_000);
});
