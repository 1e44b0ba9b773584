import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { appendFile, mkdir, open, readdir, readFile, readlink, rename, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
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

  it('bad input: a named pipe (FIFO) dropped in goes to error/ as not a file, without holding up the files after it', async () => {
    execFileSync('mkfifo', [path.join(dir, 'pipe.pdf')]);
    await eventually(async () => ((await errors()).includes('pipe.pdf.error.json') ? true : undefined));
    const reason = JSON.parse(await readFile(path.join(dir, 'error', 'pipe.pdf.error.json'), 'utf8')) as Record<string, unknown>;
    expect(reason).toMatchObject({ code: 'NOT_A_FILE', file: 'pipe.pdf' });
    expect((await docs()).has('pipe.pdf')).toBe(false);
    await writeFile(path.join(dir, 'after-pipe.txt'), 'after the pipe');
    const doc = await eventually(async () => (await docs()).get('after-pipe.txt'));
    expect((await content(doc.uuid)).toString()).toBe('after the pipe');
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
    await unlink(file);
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

  it('seeing it work: GET /v1/services shows the intake; /metrics counts taken and failed files and the drop-to-stored latency', async () => {
    const services = await rt.client.request('GET', '/v1/services', { token });
    const hot = (services.body as { sid: string; type: string; capabilities: { intake: boolean } }[]).find((s) => s.sid === 'hot');
    expect(hot).toMatchObject({ type: 'hotfolder', capabilities: { intake: true } });
    const metrics = await fetch(`${rt.url}/metrics`).then((r) => r.text());
    const taken = Number(/^intake_files_total\{sid="hot",outcome="taken",code=""\} (\d+)/m.exec(metrics)?.[1]);
    expect(taken).toBeGreaterThanOrEqual(5);
    expect(metrics).toMatch(/^intake_files_total\{sid="hot",outcome="failed",code="EMPTY_FILE"\} 1$/m);
    expect(metrics).toMatch(/^intake_files_total\{sid="hot",outcome="failed",code="SYMLINK_REFUSED"\} 1$/m);
    expect(Number(/^intake_drop_to_stored_seconds_count\{sid="hot"\} (\d+)/m.exec(metrics)?.[1])).toBe(taken);
  });

  /** Resolves once this process (the in-process runtime) has `file` open: the hot folder is reading it. */
  const openedByUs = (file: string) => eventually(async () => {
    for (const fd of await readdir('/proc/self/fd').catch(() => [])) {
      if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === file) return true;
    }
    return undefined;
  }, 30_000, 2);

  it('bad input: a file truncated while it is read is not stored from that read; it is taken once stable again, complete', async () => {
    const file = path.join(dir, 'truncated.bin');
    await writeFile(file, randomBytes(64 * 1024 * 1024));
    await openedByUs(file);
    await truncate(file, 1000);
    const short = await readFile(file);
    const doc = await eventually(async () => (await docs()).get('truncated.bin'), 60_000);
    expect(sha(await content(doc.uuid))).toBe(sha(short));
    await eventually(async () => ((await done()).includes('truncated.bin') ? true : undefined));
    expect([...(await docs()).keys()].filter((n) => n.startsWith('truncated'))).toEqual(['truncated.bin']);
  });

  it('bad input: a file replaced while it is read: the read file is stored, the new one is taken as a file of its own', async () => {
    const file = path.join(dir, 'replaced.bin');
    const first = randomBytes(64 * 1024 * 1024);
    await writeFile(file, first);
    await openedByUs(file);
    const second = Buffer.from('the replacement');
    await writeFile(path.join(dir, '.replacement'), second);
    await rename(path.join(dir, '.replacement'), file);
    const a = await eventually(async () => (await docs()).get('replaced.bin'), 60_000);
    const b = await eventually(async () => (await docs()).get('replaced (2).bin'), 60_000);
    expect(sha(await content(a.uuid))).toBe(sha(first));
    expect(sha(await content(b.uuid))).toBe(sha(second));
  });
});

describe('hot folder: a folder that cannot be used at start', () => {
  it('bad input: the service starts, the problem is in the log and the service state, and the folder is used once it can be', async () => {
    const blocked = await startTestRuntime({
      overrides: {
        logLevel: 'silent',
        services: {
          ...TEST_SERVICES,
          hot: { type: 'hotfolder', options: { stableMs: 200, rescanMs: 1000, folders: [{ path: 'blocker/in', store: { service: 'store' } }] } },
        },
      },
    });
    try {
      // a regular file where the folder's parent should be: mkdir fails
      await writeFile(path.join(blocked.dataDir, 'blocker'), 'not a directory');
      const status = async () => (await blocked.services.db.query<{ value: { ok: boolean; reason?: string } }>(
        `SELECT value FROM connector_state WHERE sid = 'hot' AND key LIKE 'folder/%'`,
      )).rows[0]?.value;
      const bad = await eventually(async () => ((await status())?.ok === false ? await status() : undefined));
      expect(bad!.reason).toMatch(/cannot use the hot folder .*blocker\/in/);
      expect((await fetch(`${blocked.url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${blocked.url}/readyz`);
      expect(ready.status).toBe(200);
      expect(((await ready.json()) as { checks: { intake?: Record<string, string> } }).checks.intake).toEqual({ hot: expect.stringMatching(/1 folder\(s\) cannot be used/) });
      await unlink(path.join(blocked.dataDir, 'blocker'));
      await eventually(async () => ((await status())?.ok === true ? true : undefined));
      await writeFile(path.join(blocked.dataDir, 'blocker', 'in', 'late.txt'), 'late');
      const t = await blocked.token('admin', ['admin']);
      await eventually(async () => {
        const res = await blocked.client.request('GET', '/v1/services/store/repo?scope=all', { token: t });
        return (res.body as { embedded: { entries: { name: string }[] } }).embedded.entries.some((e) => e.name === 'late.txt') ? true : undefined;
      });
    } finally {
      await blocked.close();
    }
  });
});
