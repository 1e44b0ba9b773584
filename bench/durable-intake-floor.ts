/**
 * The durable floor of the hot folder benchmark: the least work an intake
 * that loses nothing and takes nothing twice must do per file, written
 * plainly, with no service, queue or repository around it. For each file,
 * `concurrency` at a time (the hot folder's default is 4):
 *
 * 1. read it once, hashing it (sha256) while copying it into a blob
 *    directory under a temporary name;
 * 2. `fsync` the copy, rename it to its hash, `fsync` the blob directory;
 * 3. one committed `INSERT` of the file's row (name, size, hash) in
 *    PostgreSQL (synchronous commit, as the service's claims);
 * 4. move the source into `done/`.
 *
 * What it leaves out is what the service adds on top: the claim before the
 * store, the repository's entry and rights, a task per file, the watcher.
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, mkdirSync, readdirSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';

async function fsyncPath(p: string): Promise<void> {
  const fh = await open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Takes every file of `folder` durably; resolves the seconds it took. */
export async function durableIntakeFloor(folder: string, databaseUrl: string, concurrency: number): Promise<number> {
  const blobs = path.join(folder, '..', 'floor-blobs');
  const done = path.join(folder, 'done');
  mkdirSync(blobs, { recursive: true });
  mkdirSync(done, { recursive: true });
  const pool = new pg.Pool({ connectionString: databaseUrl, max: concurrency });
  const table = `bench_floor_${process.pid}`;
  await pool.query(`CREATE TABLE ${table} (name text PRIMARY KEY, size bigint NOT NULL, sha256 text NOT NULL, taken timestamptz NOT NULL DEFAULT now())`);
  try {
    const names = readdirSync(folder, { withFileTypes: true }).filter((d) => d.isFile()).map((d) => d.name);
    let next = 0;
    const t0 = performance.now();
    const one = async (name: string) => {
      const src = path.join(folder, name);
      const hash = createHash('sha256');
      let size = 0;
      const tmp = path.join(blobs, `.${name}.part`);
      await pipeline(
        createReadStream(src),
        new Transform({ transform(chunk: Buffer, _e, cb) { hash.update(chunk); size += chunk.length; cb(null, chunk); } }),
        createWriteStream(tmp),
      );
      await fsyncPath(tmp);
      const sha256 = hash.digest('hex');
      await rename(tmp, path.join(blobs, sha256));
      await fsyncPath(blobs);
      await pool.query(`INSERT INTO ${table} (name, size, sha256) VALUES ($1, $2, $3)`, [name, size, sha256]);
      await rename(src, path.join(done, name));
    };
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < names.length) await one(names[next++]!);
    }));
    return (performance.now() - t0) / 1000;
  } finally {
    await pool.query(`DROP TABLE IF EXISTS ${table}`).catch(() => {});
    await pool.end();
  }
}
