import { execFileSync } from 'node:child_process';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../../src/blobs/blob-store.js';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { ConnectorRegistry } from '../../../src/connectors/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { serveFiles, type HttpSource } from '../../helpers/http-source.js';
import { pathExists } from '../../helpers/fs.js';
import { derivedUuid } from '../../../src/connectors/csv/import-file.js';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';

/**
 * The csv connector in a running service (PostgreSQL, Redis, a real import
 * directory, a URL served on loopback): what a scheduled import makes of good
 * and malformed files, that each file is imported once, and that a bad
 * schedule stops the start (docs/design/csv-import.md).
 */
let rt: TestRuntime;
let token: string;
let dir: string;
let source: HttpSource;
/** What the URL source answers; changed by the tests. */
const served: Record<string, { type: string; body: string }> = {};

interface Task { tid: string; name: string; status: string; metadata: Record<string, unknown> }
interface Item { href: string; metadata: Record<string, unknown> }

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const done = () => readdir(path.join(dir, 'done'));
const errors = () => readdir(path.join(dir, 'error'));

/** Tasks of the demo service called `name`. */
async function tasksNamed(name: string): Promise<Task[]> {
  const res = await rt.client.request('GET', '/v1/services/demo/tasks?limit=500', { token });
  expect(res.status).toBe(200);
  return (res.body as Task[]).filter((t) => t.name === name);
}
const oneTask = (name: string) => eventually(async () => (await tasksNamed(name))[0]);
async function inputItems(tid: string): Promise<Item[]> {
  const res = await rt.client.request('GET', `/v1/services/demo/tasks/${tid}/input?embed=items`, { token });
  expect(res.status).toBe(200);
  return (res.body as { embedded: { listItems: Item[] } }).embedded.listItems;
}
/** Writes under a temporary name, then renames: the import sees the whole file at once. */
async function drop(name: string, body: string): Promise<void> {
  const tmp = path.join(dir, `.${name}.tmp`);
  await writeFile(tmp, body);
  await rename(tmp, path.join(dir, name));
}
/** The claims of a file (source, name), oldest first. */
const claimsOf = async (name: string) =>
  (await rt.services.db.query<{ state: string; tid: string; sha256: string; reason: Record<string, unknown> | null }>(
    `SELECT state, tid::text, sha256, reason FROM intake_files WHERE name = $1 ORDER BY id`, [name])).rows;

const GOOD_CSV = [
  'list.name,item.href,item.metadata.copies',
  'Monday,https://example.org/a.pdf,2',
  ',https://example.org/b.pdf,1',
  '',
].join('\n');
const GOOD_RLIST = [
  '[LIST]',
  'NAME="Reprints"',
  '[DOCUMENT_1]',
  'HREF="https://example.org/r1.pdf"',
  'COPIES="3"',
  '[DOCUMENT_2]',
  'HREF="https://example.org/r2.pdf"',
  '',
].join('\r\n');
/** 2,000 good rows, then one with item values but no href: refused naming row 2002 and column item.href. */
const BAD_CSV = [
  'item.href,item.metadata.copies',
  ...Array.from({ length: 2000 }, (_, i) => `https://example.org/bad-${i}.pdf,1`),
  ',5',
  '',
].join('\n');

beforeAll(async () => {
  served['/lists/orders.csv'] = { type: 'text/csv', body: 'item.href\nhttps://example.org/u1.pdf\n' };
  source = await serveFiles(served);
  rt = await startTestRuntime({
    overrides: {
      commands: { importAllowPrivate: true },
      services: {
        ...TEST_SERVICES,
        demo: { type: 'mock', options: { tasks: { itemMs: 0 } } },
        imports: {
          type: 'csv',
          options: {
            schedule: { everyMs: 1000 }, stableMs: 300, leaseTtlMs: 3000,
            sources: [{ directory: 'imports', notify: 'ops', task: { service: 'demo', metadata: { from: '{name}', bytes: '{size}' }, start: true } }],
          },
        },
        feed: {
          type: 'csv',
          options: {
            schedule: { everyMs: 1000 }, leaseTtlMs: 3000,
            sources: [{ url: `${source.url}/lists/orders.csv`, task: { service: 'demo', name: 'feed {sha256}' } }],
          },
        },
      },
    },
  });
  token = await rt.token('admin', ['admin']);
  dir = path.join(rt.dataDir, 'imports');
  await eventually(async () => ((await pathExists(path.join(dir, 'error'))) ? true : undefined));
});
afterAll(async () => {
  await rt?.close();
  await source?.close();
});

describe('csv connector', () => {
  it('import: a good CSV and a good RList become two started tasks with their items; a malformed CSV goes to error/ naming row and column and leaves nothing behind', async () => {
    await drop('monday.csv', GOOD_CSV);
    await drop('reprints.rli', GOOD_RLIST);
    await drop('broken.csv', BAD_CSV);

    const csvTask = await oneTask('monday.csv');
    const full = await rt.client.request('GET', `/v1/services/demo/tasks/${csvTask.tid}`, { token });
    expect((full.body as Task).metadata).toEqual({ from: 'monday.csv', bytes: Buffer.byteLength(GOOD_CSV) });
    expect((await inputItems(csvTask.tid)).map((i) => [i.href, i.metadata])).toEqual([
      ['https://example.org/a.pdf', { copies: '2' }], ['https://example.org/b.pdf', { copies: '1' }],
    ]);
    const rlistTask = await oneTask('reprints.rli');
    expect((await inputItems(rlistTask.tid)).map((i) => [i.href, i.metadata])).toEqual([
      ['https://example.org/r1.pdf', { COPIES: '3' }], ['https://example.org/r2.pdf', {}],
    ]);
    for (const t of [csvTask, rlistTask]) {
      await eventually(async () => {
        const r = await rt.client.request('GET', `/v1/services/demo/tasks/${t.tid}`, { token });
        return (r.body as Task).status === 'completed' ? true : undefined;
      });
    }
    await eventually(async () => ((await done()).includes('monday.csv') && (await done()).includes('reprints.rli') ? true : undefined));

    await eventually(async () => ((await errors()).includes('broken.csv.error.json') ? true : undefined));
    const reason = JSON.parse(await readFile(path.join(dir, 'error', 'broken.csv.error.json'), 'utf8')) as Record<string, unknown>;
    expect(reason).toMatchObject({ file: 'broken.csv', code: 'INVALID_CSV', row: 2002, column: 'item.href' });
    expect(reason.message).toMatch(/row 2002: item\.href is empty/);
    expect(await pathExists(path.join(dir, 'broken.csv'))).toBe(false);
    // nothing half-created: no task with the claim's tid, no list, no item of the file's rows
    const [claim] = await claimsOf('broken.csv');
    expect(claim).toMatchObject({ state: 'failed', reason: { code: 'INVALID_CSV', row: 2002, column: 'item.href' } });
    const db = rt.services.db;
    expect((await db.query('SELECT 1 FROM tasks WHERE tid = $1', [claim!.tid])).rowCount).toBe(0);
    expect((await db.query('SELECT 1 FROM lists WHERE tid = $1', [claim!.tid])).rowCount).toBe(0);
    expect((await db.query(`SELECT 1 FROM list_items WHERE href LIKE 'https://example.org/bad-%'`)).rowCount).toBe(0);
    expect(await tasksNamed('broken.csv')).toEqual([]);
    // the source's `notify` user is told once, under a uuid fixed by the claim (a retry posts nothing new)
    const ops = await rt.token('ops', ['user']);
    const told = await rt.client.request('GET', '/v1/messages?source=csv:imports', { token: ops });
    expect(told.status).toBe(200);
    expect(told.body).toHaveLength(1);
    const { rows: [claimRow] } = await db.query<{ id: string }>(`SELECT id::text FROM intake_files WHERE name = 'broken.csv'`);
    expect(told.body[0]).toMatchObject({
      uuid: derivedUuid(`csv-import-failed\n${claimRow!.id}`), type: 'error', user: 'ops',
      metadata: { file: 'broken.csv', code: 'INVALID_CSV', row: 2002, column: 'item.href' },
    });
    expect(told.body[0].text).toMatch(/^Import of "broken\.csv" from .* failed: .*row 2002/);
    await rt.services.messages.post('ops', { uuid: told.body[0].uuid, type: 'error', text: 'again' });
    expect((await rt.client.request('GET', '/v1/messages?source=csv:imports', { token: ops })).body).toHaveLength(1);
    // counted in /metrics
    const metrics = await rt.client.request('GET', '/metrics', { unchecked: true });
    expect(metrics.raw.toString()).toMatch(/intake_files_total\{sid="imports",outcome="failed",code="INVALID_CSV"\} 1/);
  });

  it('import: the same file dropped again is not imported twice (moved to done/ as a repeat); a changed file is a new import', async () => {
    const body = 'item.href\nhttps://example.org/again.pdf\n';
    await drop('again.csv', body);
    await oneTask('again.csv');
    await eventually(async () => ((await done()).includes('again.csv') ? true : undefined));

    await drop('again.csv', body);
    await eventually(async () => ((await done()).filter((n) => n.startsWith('again')).length === 2 ? true : undefined));
    expect(await pathExists(path.join(dir, 'again.csv'))).toBe(false);
    await sleep(1500);
    expect(await tasksNamed('again.csv')).toHaveLength(1);
    expect(await claimsOf('again.csv')).toHaveLength(1);

    await drop('again.csv', `${body}https://example.org/again-2.pdf\n`);
    const both = await eventually(async () => {
      const t = await tasksNamed('again.csv');
      return t.length === 2 ? t : undefined;
    });
    const hrefs = await Promise.all(both.map(async (t) => (await inputItems(t.tid)).map((i) => i.href)));
    expect(hrefs.sort((a, b) => a.length - b.length)).toEqual([
      ['https://example.org/again.pdf'], ['https://example.org/again.pdf', 'https://example.org/again-2.pdf'],
    ]);
    await eventually(async () => ((await done()).filter((n) => n.startsWith('again')).length === 3 ? true : undefined));
  });

  it('bad input: a named pipe (FIFO) in the import directory goes to error/ as not a file; the imports after it go on', async () => {
    execFileSync('mkfifo', [path.join(dir, 'pipe.csv')]);
    await eventually(async () => ((await errors()).includes('pipe.csv.error.json') ? true : undefined));
    const reason = JSON.parse(await readFile(path.join(dir, 'error', 'pipe.csv.error.json'), 'utf8')) as Record<string, unknown>;
    expect(reason).toMatchObject({ code: 'NOT_A_FILE', file: 'pipe.csv' });
    await drop('after-pipe.csv', 'item.href\nhttps://example.org/after-pipe.pdf\n');
    const task = await oneTask('after-pipe.csv');
    expect((await inputItems(task.tid)).map((i) => i.href)).toEqual(['https://example.org/after-pipe.pdf']);
  });

  it('import: a URL source is imported once and not again while its answer is unchanged; a changed answer is a new task', async () => {
    const feedTasks = async () => {
      const res = await rt.client.request('GET', '/v1/services/demo/tasks?limit=500', { token });
      return (res.body as Task[]).filter((t) => t.name.startsWith('feed '));
    };
    const first = await eventually(async () => ((await feedTasks()).length === 1 ? (await feedTasks())[0] : undefined));
    expect((await inputItems(first.tid)).map((i) => i.href)).toEqual(['https://example.org/u1.pdf']);
    await sleep(3000); // three more runs fetch the same answer
    expect(await feedTasks()).toHaveLength(1);
    expect(await claimsOf('orders.csv')).toHaveLength(1);

    served['/lists/orders.csv'] = { type: 'text/csv', body: 'item.href\nhttps://example.org/u2.pdf\n' };
    const second = await eventually(async () => {
      const t = await feedTasks();
      return t.length === 2 ? t.find((x) => x.tid !== first.tid) : undefined;
    });
    expect((await inputItems(second!.tid)).map((i) => i.href)).toEqual(['https://example.org/u2.pdf']);
  });

  it('bad input: an invalid cron is refused at start-up as a configuration error naming the option', async () => {
    const config = loadConfig({
      env: {}, configDir: 'config', overrides: {
        dataDir: rt.dataDir,
        services: {
          demo: { type: 'mock', options: { tasks: {} } },
          nightly: { type: 'csv', options: { schedule: { cron: '61 2 * * *' }, sources: [{ directory: 'nightly', task: { service: 'demo' } }] } },
        },
      },
    });
    const blobs = new BlobStore(path.join(rt.dataDir, 'blobs'));
    const created = ConnectorRegistry.create(config, blobs, createLogger('silent'));
    await expect(created).rejects.toThrow(ConfigError);
    await expect(ConnectorRegistry.create(config, blobs, createLogger('silent'))).rejects.toThrow(/services\.nightly\.options: schedule\.cron: invalid cron expression "61 2 \* \* \*"/);
  });
});
