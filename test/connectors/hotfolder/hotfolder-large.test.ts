import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import { killAll, processEnv, startProcess, waitLog, waitReady } from '../../helpers/process.js';
import { eventually } from '../../helpers/runtime.js';

/**
 * A 2 GiB file through the hot folder of a real server process: taken whole
 * (its sha256 stored), moved to done/, with the process's memory flat: both
 * reads (hash, then store) stream through one descriptor.
 */
afterAll(() => killAll());

const SIZE = 2 * 1024 ** 3;
const kib = (status: string, key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);

describe('hot folder: a 2 GiB file', () => {
  it('bad input: a 2 GiB file is taken whole and streamed: the server\'s peak memory grows by less than 150 MiB', async () => {
    const env = await processEnv({
      services: {
        store: { type: 'store' },
        hot: { type: 'hotfolder', options: { stableMs: 500, folders: [{ path: 'in', store: { service: 'store' } }] } },
      },
    });
    try {
      const server = await startProcess('all', env.env);
      await waitReady(server.url!);
      await waitLog(server, /"sid":"hot",.*"msg":"intake started"/);
      const statusFile = `/proc/${server.child.pid}/status`;
      // the peak counted from here (Linux: "5" resets VmHWM to the current RSS)
      await writeFile(`/proc/${server.child.pid}/clear_refs`, '5');
      const before = kib(await readFile(statusFile, 'utf8'), 'VmRSS');
      // a file of 2 GiB, written as a sparse file and then given a head and a tail that count
      const file = path.join(env.dataDir, 'staging.bin');
      await writeFile(file, 'head of the big file\n');
      await truncate(file, SIZE);
      const expected = createHash('sha256');
      await pipeline(createReadStream(file), expected);
      const sha = expected.digest('hex');
      const { rename } = await import('node:fs/promises');
      await rename(file, path.join(env.dataDir, 'in', 'big.bin'));
      await eventually(async () => ((await readdir(path.join(env.dataDir, 'in', 'done'))).includes('big.bin') ? true : undefined), 600_000, 500);
      const peak = kib(await readFile(statusFile, 'utf8'), 'VmHWM');
      const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await client.connect();
      try {
        await client.query(`SET search_path TO "${env.schema}"`);
        const { rows } = await client.query<{ size: string; sha256: string }>(`SELECT size::text, sha256 FROM entries WHERE sid = 'store' AND name = 'big.bin'`);
        expect(rows).toEqual([{ size: String(SIZE), sha256: sha }]);
      } finally {
        await client.end();
      }
      console.info(`2 GiB through the hot folder: server RSS ${Math.round(before / 1024)} MiB before, peak ${Math.round(peak / 1024)} MiB while taking it`);
      expect((peak - before) / 1024, `peak ${peak} kB, before ${before} kB`).toBeLessThan(150);
    } finally {
      await env.cleanup();
    }
  }, 900_000);
});
