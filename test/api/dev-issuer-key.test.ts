import { mkdir, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { jwtVerify } from 'jose';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { killAll, startProcess, waitLog, waitReady, type TestProcess } from '../helpers/process.js';
import { dropQueues } from '../helpers/runtime.js';

/**
 * The development issuer's key file: published whole (temporary name, fsync,
 * link), so processes starting together on a fresh DATA_DIR agree on one key
 * and none reads a half-written file; a broken file from an old crash is
 * replaced rather than blocking every start.
 */
const schema = uniqueName('dk');
const prefix = uniqueName('dk');
afterAll(async () => {
  killAll();
  await dropSchema(schema);
  await dropQueues(prefix);
});

const keyDir = (dataDir: string) => path.join(dataDir, 'dev-issuer');
const kidOf = (i: DevIssuer) => i.jwks().keys[0]!.kid;

describe('in one process', () => {
  it('many opens at once on a fresh DATA_DIR agree on one complete key (10 rounds of 16)', async () => {
    for (let round = 0; round < 10; round++) {
      const dir = await tempDir('wcr-dk-');
      const issuers = await Promise.all(Array.from({ length: 16 }, () => DevIssuer.open(dir, 'http://127.0.0.1:1/dev-issuer')));
      expect(new Set(issuers.map(kidOf)).size).toBe(1);
      // only the key file is left: no temporary files from the losers
      expect(await readdir(keyDir(dir))).toEqual(['key.json']);
      const stored = JSON.parse(await readFile(path.join(keyDir(dir), 'key.json'), 'utf8')) as { publicJwk: { kid: string } };
      expect(stored.publicJwk.kid).toBe(kidOf(issuers[0]!));
      // any of them signs what any other verifies
      const token = await issuers[3]!.mint({ user: 'u', roles: [] });
      await expect(jwtVerify(token, issuers[11]!.keySet())).resolves.toBeTruthy();
    }
  });

  it('a reader polling the key file never sees it incomplete while it is created (20 rounds)', async () => {
    // Readers in other threads read as fast as they can while this thread creates the key:
    // every read either finds no file or a complete key, never an empty or partial one.
    const reader = `
      const { parentPort, workerData } = require('node:worker_threads');
      const fs = require('node:fs');
      const seen = { missing: 0, complete: 0, partial: [] };
      const end = Date.now() + workerData.ms;
      while (Date.now() < end && seen.complete < 50) {
        let text;
        try { text = fs.readFileSync(workerData.file, 'utf8'); } catch (err) { if (err.code === 'ENOENT') { if (seen.missing++ === 0) parentPort.postMessage('polling'); continue; } throw err; }
        try { JSON.parse(text).privateJwk.d.length; seen.complete++; } catch { seen.partial.push(text.slice(0, 40)); }
      }
      parentPort.postMessage(seen);`;
    for (let round = 0; round < 20; round++) {
      const dir = await tempDir('wcr-dk-');
      const file = path.join(keyDir(dir), 'key.json');
      await mkdir(keyDir(dir), { recursive: true });
      const workers = Array.from({ length: 2 }, () => new Worker(reader, { eval: true, workerData: { file, ms: 5000 } }));
      const next = <T>(w: Worker) => new Promise<T>((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
      });
      await Promise.all(workers.map((w) => next<string>(w))); // both readers are polling the missing file
      const results = workers.map((w) => next<{ missing: number; complete: number; partial: string[] }>(w));
      await DevIssuer.open(dir, 'http://x');
      for (const seen of await Promise.all(results)) {
        expect(seen.partial, `round ${round}`).toEqual([]);
        expect(seen.complete).toBeGreaterThan(0);
      }
    }
  }, 120_000);

  it('the key file is private to its owner', async () => {
    const dir = await tempDir('wcr-dk-');
    await DevIssuer.open(dir, 'http://x');
    const { stat } = await import('node:fs/promises');
    expect((await stat(path.join(keyDir(dir), 'key.json'))).mode & 0o077).toBe(0);
  });

  for (const [label, content] of [
    ['empty (crash right after create)', ''],
    ['half written', '{"privateJwk":{"kty":"EC","crv":"P-256","x":"abc'],
    ['JSON without a private key', '{"publicJwk":{"kty":"EC","kid":"k"}}'],
    ['the JSON null', 'null'],
  ] as const) {
    it(`an unparsable key file (${label}) left by an old crash is set aside and replaced`, async () => {
      const dir = await tempDir('wcr-dk-');
      await mkdir(keyDir(dir), { recursive: true });
      await writeFile(path.join(keyDir(dir), 'key.json'), content);
      const [a, b, c] = await Promise.all([0, 1, 2].map(() => DevIssuer.open(dir, 'http://x')));
      expect(new Set([a, b, c].map((i) => kidOf(i!))).size).toBe(1);
      const names = await readdir(keyDir(dir));
      expect(names).toContain('key.json');
      const aside = names.filter((n) => n.startsWith('key.json.broken-'));
      expect(aside).toHaveLength(1);
      expect(await readFile(path.join(keyDir(dir), aside[0]!), 'utf8')).toBe(content);
      // and the next start reads the new key
      expect(kidOf(await DevIssuer.open(dir, 'http://x'))).toBe(kidOf(a!));
    });
  }

  it('temporary files of crashed writers are removed once old; a fresh one (a writer at work) is left', async () => {
    const dir = await tempDir('wcr-dk-');
    await mkdir(keyDir(dir), { recursive: true });
    const stale = path.join(keyDir(dir), '.key-stale.tmp');
    const fresh = path.join(keyDir(dir), '.key-fresh.tmp');
    await writeFile(stale, '{"privateJwk":');
    await writeFile(fresh, '{"privateJwk":');
    const old = new Date(Date.now() - 10 * 60_000);
    await utimes(stale, old, old);
    await DevIssuer.open(dir, 'http://x');
    const names = await readdir(keyDir(dir));
    expect(names).not.toContain('.key-stale.tmp');
    expect(names).toContain('.key-fresh.tmp');
    expect(names).toContain('key.json');
  });
});

describe('real processes', () => {
  it('two api and two worker processes started at once on a fresh DATA_DIR all start and share one key (3 rounds, the last over a broken key file)', async () => {
    for (let round = 0; round < 3; round++) {
      const dataDir = await tempDir('wcr-dk-');
      const cfg = path.join(dataDir, 'test.yaml');
      await writeFile(cfg, `database:\n  schema: ${schema}\nredis:\n  prefix: ${prefix}\n`);
      if (round === 2) {
        // the last round starts over the leftover of a crash mid-write by an older version
        await mkdir(keyDir(dataDir), { recursive: true });
        await writeFile(path.join(keyDir(dataDir), 'key.json'), '{"privateJwk":{"kty":"EC"');
      }
      const env = { DATA_DIR: dataDir, DATABASE_URL: TEST_DATABASE_URL, CONFIG: cfg };
      const procs: TestProcess[] = await Promise.all([
        startProcess('api', env), startProcess('api', env), startProcess('worker', env), startProcess('worker', env),
      ]);
      const logs = () => procs.map((p, i) => `--- process ${i}\n${p.logs.slice(-20).join('\n')}`).join('\n');
      try {
        // a process that dies fails the round at once instead of waiting for the bound
        const died = Promise.race(procs.map((p, i) => p.exited.then((code) => { throw new Error(`round ${round}: process ${i} exited with ${code}\n${logs()}`); })));
        died.catch(() => {});
        await Promise.race([died, Promise.all(procs.map((p) => (p.url ? waitReady(p.url) : waitLog(p, /workers running/))))]);
        const stored = JSON.parse(await readFile(path.join(keyDir(dataDir), 'key.json'), 'utf8')) as { publicJwk: { kid: string } };
        for (const p of procs.filter((x) => x.url)) {
          const jwks = (await (await fetch(`${p.url!}/dev-issuer/jwks`)).json()) as { keys: { kid: string }[] };
          expect(jwks.keys.map((k) => k.kid)).toEqual([stored.publicJwk.kid]);
        }
        // no temporary files left; issuer.json is the API processes' record for `npm run token`
        expect((await readdir(keyDir(dataDir))).filter((n) => n !== 'key.json' && n !== 'issuer.json' && !n.startsWith('key.json.broken-'))).toEqual([]);
      } finally {
        for (const p of procs) p.child.kill('SIGKILL');
        await Promise.all(procs.map((p) => p.exited));
      }
    }
  }, 600_000);
});
