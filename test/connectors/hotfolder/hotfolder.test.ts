import { createHash } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../../helpers/runtime.js';
import { pathExists } from '../../helpers/fs.js';

/**
 * The hot folder in a running service (PostgreSQL, Redis, real directories):
 * what is taken when, what becomes of it, and each bad input of the issue
 * with its documented outcome (docs/design/hot-folder.md).
 */
const STABLE_MS = 600;
let rt: TestRuntime;
let token: string;
let dir: string;

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Doc { uuid: string; name: string; metadata: Record<string, unknown>; href: string }
/** Documents of the hot folder's collection in the store, by name. */
async function docs(): Promise<Map<string, Doc>> {
  const res = await rt.client.request('GET', '/v1/services/store/repo?scope=all&limit=500', { token });
  expect(res.status).toBe(200);
  const list = (res.body as { embedded?: { entries?: Doc[] } }).embedded?.entries ?? (res.body as Doc[]);
  return new Map((Array.isArray(list) ? list : []).filter((d) => (d as { type?: string }).type !== 'collection').map((d) => [d.name, d]));
}
/** A document's content (once written: the entry is listed a moment before its content is in). */
const content = (uuid: string) => eventually(async () => {
  const res = await rt.client.request('GET', `/v1/services/store/repo/${uuid}/content`, { token, unchecked: true });
  return res.status === 200 ? res.raw : undefined;
});
const done = () => readdir(path.join(dir, 'done'));
const errors = () => readdir(path.join(dir, 'error'));

beforeAll(async () => {
  rt = await startTestRuntime({
    overrides: {
      services: {
        ...TEST_SERVICES,
        demo: { type: 'mock', options: { tasks: { itemMs: 0 } } },
        hot: {
          type: 'hotfolder',
          options: {
            stableMs: STABLE_MS, rescanMs: 2000, leaseTtlMs: 3000,
            folders: [{
              path: 'in', store: { service: 'store', collection: 'intake', metadata: { channel: 'scan', bytes: '{size}' } },
              task: { service: 'demo', name: 'print {stem}', metadata: { from: '{name}' }, start: true },
            }],
          },
        },
      },
    },
  });
  token = await rt.token('admin', ['admin']);
  dir = path.join(rt.dataDir, 'in');
  await eventually(async () => ((await pathExists(path.join(dir, 'done'))) ? true : undefined));
});
afterAll(async () => {
  await rt?.close();
});

describe('hot folder', () => {
  it('takes a dropped file once: a document with its source, a task started with it, the file in done/', async () => {
    const body = Buffer.from('%PDF-1.4 hello\n');
    await writeFile(path.join(dir, 'letter one.pdf'), body);
    const doc = await eventually(async () => (await docs()).get('letter one.pdf'));
    expect(doc.metadata).toMatchObject({ channel: 'scan', bytes: body.length, source: { folder: dir, name: 'letter one.pdf' } });
    expect(sha(await content(doc.uuid))).toBe(sha(body));
    await eventually(async () => ((await done()).includes('letter one.pdf') ? true : undefined));
    expect(await pathExists(path.join(dir, 'letter one.pdf'))).toBe(false);
    const tasks = await rt.client.request('GET', '/v1/services/demo/tasks?limit=100', { token });
    const task = (tasks.body as { name: string; tid: string; metadata: Record<string, unknown> }[]).find((t) => t.name === 'print letter one');
    expect(task).toBeDefined();
    const t = await eventually(async () => {
      const r = await rt.client.request('GET', `/v1/services/demo/tasks/${task!.tid}`, { token });
      return (r.body as { status: string }).status === 'completed' ? r.body as { metadata: unknown } : undefined;
    });
    expect(t.metadata).toEqual({ from: 'letter one.pdf' });
  });

  it('completeness: a file written slowly in parts is taken only once complete', async () => {
    const file = path.join(dir, 'slow.bin');
    const parts: Buffer[] = [];
    for (let i = 0; i < 8; i++) {
      const part = Buffer.alloc(10_000, i);
      parts.push(part);
      await appendFile(file, part);
      await sleep(STABLE_MS / 3);
      expect((await docs()).has('slow.bin')).toBe(false);
    }
    const doc = await eventually(async () => (await docs()).get('slow.bin'));
    expect(sha(await content(doc.uuid))).toBe(sha(Buffer.concat(parts)));
  });

  it('completeness: a file held open for writing is not taken, however long it stays the same size', async () => {
    const file = path.join(dir, 'held.txt');
    const fh = await open(file, 'w');
    await fh.write('part one\n');
    await sleep(STABLE_MS * 4);
    expect((await docs()).has('held.txt')).toBe(false);
    await fh.write('part two\n');
    await fh.close();
    const doc = await eventually(async () => (await docs()).get('held.txt'));
    expect((await content(doc.uuid)).toString()).toBe('part one\npart two\n');
  });

  it('bad input: names with spaces and Unicode are taken as they are; leading dots and temporary names are left alone', async () => {
    await writeFile(path.join(dir, 'Grüße an 日本 (1).txt'), 'unicode');
    await writeFile(path.join(dir, '.hidden'), 'dot');
    await writeFile(path.join(dir, 'upload.part'), 'partial');
    const doc = await eventually(async () => (await docs()).get('Grüße an 日本 (1).txt'));
    expect((await content(doc.uuid)).toString()).toBe('unicode');
    await sleep(STABLE_MS * 3);
    expect(await pathExists(path.join(dir, '.hidden'))).toBe(true);
    expect(await pathExists(path.join(dir, 'upload.part'))).toBe(true);
  });

  it('bad input: a zero-byte file goes to error/ with its reason, nothing stored', async () => {
    await writeFile(path.join(dir, 'empty.pdf'), '');
    await eventually(async () => ((await errors()).includes('empty.pdf.error.json') ? true : undefined));
    const reason = JSON.parse(await readFile(path.join(dir, 'error', 'empty.pdf.error.json'), 'utf8')) as Record<string, unknown>;
    expect(reason).toMatchObject({ code: 'EMPTY_FILE', file: 'empty.pdf' });
    expect(typeof reason.time).toBe('string');
    expect((await docs()).has('empty.pdf')).toBe(false);
  });

  it('bad input: a name the repository refuses goes to error/ and nothing of it stays', async () => {
    const name = 'bad\u0007bell.txt';
    await writeFile(path.join(dir, name), 'bell');
    await eventually(async () => ((await errors()).includes(`${name}.error.json`) ? true : undefined));
    const reason = JSON.parse(await readFile(path.join(dir, 'error', `${name}.error.json`), 'utf8')) as { code: string; message: string };
    expect(reason.code).toBe('INVALID_NAME');
    expect([...(await docs()).keys()].some((n) => n.includes('bell'))).toBe(false);
    const tasks = await rt.client.request('GET', '/v1/services/demo/tasks?limit=500', { token });
    expect((tasks.body as { name: string }[]).some((t) => t.name.includes('bell'))).toBe(false);
  });

  it('bad input: a symlink is never followed: the link goes to error/, its target stays untouched', async () => {
    const outside = path.join(rt.dataDir, 'secret.txt');
    await writeFile(outside, 'secret');
    await symlink(outside, path.join(dir, 'link.txt'));
    await eventually(async () => ((await errors()).includes('link.txt.error.json') ? true : undefined));
    expect(JSON.parse(await readFile(path.join(dir, 'error', 'link.txt.error.json'), 'utf8'))).toMatchObject({ code: 'SYMLINK_REFUSED' });
    expect(await readFile(outside, 'utf8')).toBe('secret');
    expect((await docs()).has('link.txt')).toBe(false);
  });

  it('bad input: a directory dropped in is left where it is, its files are not taken', async () => {
    await mkdir(path.join(dir, 'subdir'));
    await writeFile(path.join(dir, 'subdir', 'inner.txt'), 'inner');
    await sleep(STABLE_MS * 4);
    expect(await pathExists(path.join(dir, 'subdir', 'inner.txt'))).toBe(true);
    expect((await docs()).has('inner.txt')).toBe(false);
  });

  it('bad input: a file that vanishes before it is claimed leaves nothing', async () => {
    const file = path.join(dir, 'gone.txt');
    await writeFile(file, 'gone');
    await sleep(STABLE_MS / 4);
    await (await import('node:fs/promises')).unlink(file);
    await sleep(STABLE_MS * 3);
    expect((await docs()).has('gone.txt')).toBe(false);
    expect((await errors()).some((n) => n.startsWith('gone'))).toBe(false);
  });

  it('a second file of a name already in the collection is stored under a numbered name; done/ keeps both', async () => {
    await writeFile(path.join(dir, 'twice.txt'), 'first');
    await eventually(async () => ((await done()).includes('twice.txt') ? true : undefined));
    await writeFile(path.join(dir, 'twice.txt'), 'second');
    const second = await eventually(async () => (await docs()).get('twice (2).txt'));
    await eventually(async () => ((await content(second.uuid)).toString() === 'second' ? true : undefined));
    await eventually(async () => ((await done()).filter((n) => n.startsWith('twice')).length === 2 ? true : undefined));
  });
});
