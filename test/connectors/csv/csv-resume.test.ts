import { randomUUID, createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { intakeFileStore } from '../../../src/connectors/lifecycle/intake-file-store.js';
import { workPort } from '../../../src/runtime/work-port.js';
import { dropSchema } from '../../helpers/databases.js';
import { dropQueues, eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Crash-resume of the csv connector: claims left unfinished at three points
 * of an import (before the task, after the task's commit but before the
 * claim said so, after the move to done/) are finished at the next start with
 * exactly one task each, under the tid fixed in the claim.
 */
const demo = { type: 'mock', options: { tasks: { itemMs: 0 } } };
let before: TestRuntime;
let after: TestRuntime | undefined;
let dir: string;
const claimed: Record<string, string> = {};

const body = (n: string) => `item.href\nhttps://example.org/${n}.pdf\n`;

beforeAll(async () => {
  before = await startTestRuntime({ overrides: { services: { ...TEST_SERVICES, demo } } });
  dir = path.join(before.dataDir, 'crash');
  await mkdir(path.join(dir, 'done'), { recursive: true });
  await mkdir(path.join(dir, 'error'), { recursive: true });
  const claims = intakeFileStore(before.services.db, 'crashy');
  const work = workPort(before.services);
  for (const name of ['before-task', 'task-committed', 'moved']) {
    const file = path.join(dir, `${name}.csv`);
    await writeFile(file, body(name));
    const st = await stat(file);
    const tid = randomUUID();
    claimed[name] = tid;
    const { claim } = await claims.claim({
      source: dir, name: `${name}.csv`, size: st.size, mtimeMs: st.mtimeMs, ino: `${st.dev}:${st.ino}`,
      sha256: createHash('sha256').update(await readFile(file)).digest('hex'), docUuid: null, tid,
    });
    if (name === 'before-task') continue; // crashed after the claim
    await work.createTask({ service: 'demo', tid, name: `${name}.csv`, metadata: {}, list: { format: 'csv', body: createReadStream(file) }, creator: 'csv:crashy', owner: null });
    if (name === 'task-committed') continue; // crashed after the task's commit
    await claims.markStored(claim.id, `${name}.csv`);
    await rename(file, path.join(dir, 'done', `${name}.csv`)); // crashed after the move
  }
  await before.close(false);
  after = await startTestRuntime({
    shareWith: before,
    overrides: {
      services: {
        ...TEST_SERVICES, demo,
        // a yearly schedule: within this test only the resume at start runs
        crashy: { type: 'csv', options: { schedule: { cron: '0 0 1 1 *' }, stableMs: 0, sources: [{ directory: 'crash', task: { service: 'demo', start: true } }] } },
      },
    },
  });
}, 60_000);
afterAll(async () => {
  await after?.close();
  await dropSchema(before.schema);
  await dropQueues(before.prefix);
  await rm(before.dataDir, { recursive: true, force: true });
});

describe('csv connector after a crash', () => {
  it('import: claims left at any point finish with exactly one started task each, under the claimed tid', async () => {
    const rt = after!;
    const token = await rt.token('admin', ['admin']);
    const db = rt.services.db;
    await eventually(async () => {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM intake_files WHERE sid = 'crashy' AND state = 'done'`);
      return rows[0]!.n === 3 ? true : undefined;
    });
    for (const [name, tid] of Object.entries(claimed)) {
      const tasks = await db.query<{ tid: string }>(`SELECT tid::text FROM tasks WHERE sid = 'demo' AND name = $1`, [`${name}.csv`]);
      expect(tasks.rows.map((r) => r.tid)).toEqual([tid]);
      const res = await rt.client.request('GET', `/v1/services/demo/tasks/${tid}/input?embed=items`, { token });
      expect((res.body as { embedded: { listItems: { href: string }[] } }).embedded.listItems.map((i) => i.href)).toEqual([`https://example.org/${name}.pdf`]);
      await eventually(async () => {
        const r = await rt.client.request('GET', `/v1/services/demo/tasks/${tid}`, { token });
        return (r.body as { status: string }).status === 'completed' ? true : undefined;
      });
    }
    expect((await readdir(path.join(dir, 'done'))).sort()).toEqual(['before-task.csv', 'moved.csv', 'task-committed.csv']);
    expect(await readdir(path.join(dir, 'error'))).toEqual([]);
  });
});
