import { randomUUID } from 'node:crypto';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import { TEST_DATABASE_URL } from '../../helpers/env.js';
import type { TestClient } from '../../helpers/client.js';

/**
 * Defect class: concurrent listings of a big `files` tree each walked it and
 * held a database connection, starving everybody else. Now one sync per
 * (service, collection, recursive) runs at a time and concurrent listings
 * share it. The sync is held still by a row lock the test owns (an
 * uncommitted row for a file the sync wants to add), so "concurrent" is
 * certain, not a matter of timing.
 */
let rt: TestRuntime;
let admin: TestClient;
let reader: TestClient;
let bob: TestClient;
let root: string;
const base = '/v1/services/files/repo';
const DIRS = 10;
const FILES = 50;

beforeAll(async () => {
  rt = await startTestRuntime();
  admin = rt.client.withToken(await rt.token('ada', ['admin']));
  reader = rt.client.withToken(await rt.token('rita', ['readonly']));
  bob = rt.client.withToken(await rt.token('bob', ['user']));
  root = path.join(rt.dataDir, 'files');
  for (let d = 0; d < DIRS; d++) {
    await mkdir(path.join(root, 'big', `d${d}`), { recursive: true });
    await Promise.all(Array.from({ length: FILES }, (_, f) => writeFile(path.join(root, 'big', `d${d}`, `f${f}.txt`), `${d}/${f}`)));
  }
});
afterAll(async () => {
  await rt?.close();
});

/** Holds an uncommitted row for `name` in collection `parent`: a sync adding that name waits for it. */
async function holdName(parent: { uuid: string; path: string }, name: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path="${rt.schema}"` });
  await client.connect();
  await client.query('BEGIN');
  await client.query(
    `INSERT INTO entries (uuid, sid, parent, name, type, path) VALUES ($1, 'files', $2, $3, 'document', $4)`,
    [randomUUID(), parent.uuid, name, `${parent.path}/${name}`],
  );
  const xid = (await client.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x')).rows[0]!.x;
  return {
    /** Statements (of any session) waiting for this transaction to end. */
    waiters: async () => Number((await client.query<{ n: string }>(
      `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'transactionid' AND transactionid::text = $1 AND NOT granted`, [xid],
    )).rows[0]!.n),
    release: async () => {
      await client.query('ROLLBACK');
      await client.end();
    },
  };
}

describe('listings of a big filesystem tree share one sync', () => {
  it('twenty concurrent scope=all listings: one sync, one waiting connection, correct results; others are not held up', async () => {
    // first listing: rows for the whole tree
    const first = await admin.get(`${base}?scope=all&limit=1`);
    expect(first.status).toBe(200);
    const mine = (await bob.post(base, { name: 'mine', type: 'collection' })).body.uuid as string;
    for (const n of ['a.txt', 'b.txt', 'c.txt']) expect((await bob.post(`${base}/${mine}`, { name: n })).status).toBe(200);

    const d3 = (await admin.get(`${base}?scope=all&name=d3`)).body.embedded.entries[0];
    await writeFile(path.join(root, 'big', 'd3', 'late.txt'), 'late');
    const hold = await holdName({ uuid: d3.uuid, path: 'big/d3' }, 'late.txt');
    let listings: Promise<{ status: number; names: string[] }>[] = [];
    try {
      const before = rt.services.repository.syncsStarted;
      listings = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? reader : admin)
        .get(`${base}?scope=all&limit=500&name=late.txt`)
        .then((r) => ({ status: r.status, names: r.body.embedded?.entries.map((e: { name: string }) => e.name) as string[] })));
      // the shared sync reaches the held name and waits; give every request ample time to arrive
      await eventually(async () => ((await hold.waiters()) > 0 ? true : undefined));
      await sleep(2000);
      expect(await hold.waiters()).toBe(1);
      expect(rt.services.repository.syncsStarted - before).toBe(1);

      // another user's small listing runs meanwhile: its own sync, and a free connection for it
      const other = await Promise.race([
        bob.get(`${base}/${mine}/children`).then((r) => r),
        sleep(15_000).then(() => undefined),
      ]);
      expect(other?.status).toBe(200);
      expect(other?.body.map((e: { name: string }) => e.name)).toEqual(['a.txt', 'b.txt', 'c.txt']);
    } finally {
      await hold.release();
    }
    const results = await Promise.all(listings);
    results.forEach((r, i) => {
      expect(r.status).toBe(200);
      // the read-only user sees only own entries (none); everybody else sees what the shared sync found
      expect(r.names).toEqual(i % 2 === 0 ? [] : ['late.txt']);
    });
  });

  it('a failing shared sync fails every waiting listing with its error (503 ROOT_UNAVAILABLE), and the next one starts afresh', async () => {
    const moved = path.join(rt.dataDir, 'files-away');
    await rename(root, moved);
    try {
      const results = await Promise.all(Array.from({ length: 6 }, () => admin.get(`${base}?scope=all&limit=5`)));
      for (const r of results) expect(r.body.code, JSON.stringify(r.body)).toBe('ROOT_UNAVAILABLE');
    } finally {
      await rename(moved, root);
    }
    expect((await admin.get(`${base}?scope=all&limit=5`)).status).toBe(200);
  });

  it('sequential listings each sync again: a file added on disk shows at once', async () => {
    for (let i = 0; i < 3; i++) {
      await writeFile(path.join(root, 'big', `fresh-${i}.txt`), 'x');
      const res = await admin.get(`${base}?scope=all&name=fresh-${i}.txt`);
      expect(res.body.embedded.entries.map((e: { name: string }) => e.name)).toEqual([`fresh-${i}.txt`]);
    }
  });
});
