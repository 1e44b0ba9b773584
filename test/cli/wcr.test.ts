import { ensureBuilt } from '../helpers/build.js';
import { execFile } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, processEnv, startProcess, waitReady, type ProcessEnv, type TestProcess } from '../helpers/process.js';
import { TEST_REDIS_URL } from '../helpers/env.js';
import { eventually } from '../helpers/runtime.js';

/**
 * `wcr`, the operator CLI (issue 24, item 7): the built binary
 * (`npm run build`, then `node dist/src/entrypoints/wcr.js`) against a real
 * server process (PostgreSQL, Redis, a directory printer, the mock task
 * connector), each command once with `--json` checked, `--help` on every
 * command. The CLI gets only the server's DATA_DIR, CONFIG and PORT and mints
 * its own token from the development issuer.
 */
const run = promisify(execFile);
const BIN = path.resolve('dist/src/entrypoints/wcr.js');

let env: ProcessEnv;
let proc: TestProcess;
let cliEnv: Record<string, string>;
let printed: string;

beforeAll(async () => {
  ensureBuilt();
  env = await processEnv({
    services: { work: { type: 'mock', options: { tasks: { itemMs: 0 } } } },
    queues: { reconcileIntervalMs: 2000 },
  });
  printed = path.join(env.dataDir, 'printed');
  await mkdir(printed, { recursive: true });
  const port = String(await freePort());
  proc = await startProcess('all', { ...env.env, PORT: port });
  await waitReady(proc.url!);
  cliEnv = { PATH: process.env.PATH!, ...env.env, PORT: port, REDIS_URL: TEST_REDIS_URL };
}, 300_000);
afterAll(async () => {
  await env?.cleanup();
});

interface Ran { code: number; stdout: string; stderr: string }
async function wcr(...args: string[]): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(process.execPath, [BIN, ...args], { env: cliEnv, timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
async function json<T = any>(...args: string[]): Promise<T> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const r = await wcr('--json', ...args);
  expect(r.code, `wcr ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as T;
}
const api = async (method: string, p: string, body?: string, type = 'application/json') => {
  const token = await env.token(proc.url!);
  const res = await fetch(`${proc.url}${p}`, { method, body, headers: { authorization: `Bearer ${token}`, 'content-type': type } });
  return { status: res.status, body: await res.json() as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
};

// each test runs 5 to 20 CLI processes (a Node start each, about half a second on a quiet machine)
describe('wcr', { timeout: 120_000 }, () => {
  it('has --help on every command', async () => {
    const commands = [[], ['token'], ['jobs'], ['jobs', 'list'], ['jobs', 'watch'], ['jobs', 'cancel'], ['jobs', 'repeat'],
      ['printers'], ['printers', 'list'], ['printers', 'add'], ['printers', 'pause'], ['printers', 'resume'], ['printers', 'check'],
      ['tasks'], ['tasks', 'list'], ['tasks', 'watch'], ['tasks', 'start'], ['lists'], ['lists', 'import'], ['lists', 'export'], ['status']];
    for (const c of commands) {
      const r = await wcr(...c, '--help');
      expect(r.code, c.join(' ')).toBe(0);
      expect(r.stdout).toContain(`Usage: wcr${c.length ? ` ${c.join(' ')}` : ''}`);
      expect(r.stdout).toContain('--json');
    }
    const token = await wcr('token', '--help');
    expect(token.stdout).toMatch(/--expires <seconds>\s+lifetime in seconds \(default: 3600\)/);
  });

  it('token: mints for the server\'s development issuer; an unknown role is refused naming the known ones', async () => {
    const minted = await json('token', '--as', 'bob', '--roles', 'operator');
    expect(minted).toMatchObject({ user: 'bob', roles: ['operator'] });
    const res = await fetch(`${proc.url}/v1/services`, { headers: { authorization: `Bearer ${minted.token}` } });
    expect(res.status).toBe(200);
    const bad = await wcr('token', '--roles', 'superuser');
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown role "superuser"; the server's roles are .*admin.*operator/);
    expect(bad.stdout).toBe('');
    const usage = await wcr('token', '--expires', 'soon');
    expect(usage.code).not.toBe(0);
    expect(usage.stderr).toContain('--expires must be a positive whole number');
  });

  it('status: ready, queues, versions', async () => {
    const s = await json('status');
    expect(s).toMatchObject({ ready: true, checks: { database: 'ok', redis: 'ok' }, versions: { workflowApi: '0.5', printApi: '11.2.0', cli: '0.1.0' } });
    await eventually(async () => (Object.keys((await json('status')).queues).length > 0 ? true : undefined), 30_000, 500);
    const table = await wcr('status');
    expect(table.stdout).toMatch(/^QUEUE/m);
    expect(table.stdout).toContain('Print Job Management API 11.2.0');
  });

  it('printers: add, list, pause, resume, check', async () => {
    const added = await json('printers', 'add', 'desk', `file://${printed}`, '--description', 'the desk printer');
    expect(added).toMatchObject({ name: 'desk', connection: `file://${printed}`, description: 'the desk printer', paused: false });
    expect((await json<{ name: string }[]>('printers', 'list')).map((p) => p.name)).toContain('desk');
    expect(await json('printers', 'pause', 'desk')).toMatchObject({ paused: true });
    expect((await wcr('printers', 'list')).stdout).toMatch(/^NAME\s+CONNECTION/);
    expect(await json('printers', 'resume', 'desk')).toMatchObject({ paused: false });
    expect((await json('printers', 'check', 'desk')).physical).toMatchObject({ reachable: true });
    const missing = await wcr('printers', 'pause', 'nope');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/404/);
  });

  it('jobs: list, cancel, repeat, watch to the end', async () => {
    await json('printers', 'add', 'held', `file://${printed}`);
    await json('printers', 'pause', 'held');
    const submitted = await api('POST', '/v3/jobs/?printer=held', 'hello printer\n', 'text/plain');
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const id = submitted.body.id as number;
    const listed = await json<{ id: number; status: string }[]>('jobs', 'list', '--printer', 'held');
    expect(listed.map((j) => j.id)).toEqual([id]);
    expect((await json('jobs', 'cancel', String(id))).status).toBe('canceled');
    expect((await json<unknown[]>('jobs', 'list', '--printer', 'held', '--status', 'waitprocessing'))).toEqual([]);
    expect((await json('jobs', 'repeat', String(id))).status).toMatch(/^wait/);
    await json('printers', 'resume', 'held');
    const watched = await json('jobs', 'watch', String(id), '--timeout', '60');
    expect(watched).toMatchObject({ id, status: 'processed' });
    expect((await wcr('jobs', 'list')).stdout).toMatch(/^ID\s+STATUS\s+PRINTER/);
  });

  it('tasks: list, start with --watch, watch', async () => {
    const items = [0, 1, 2, 3].map((i) => ({ href: `https://example.org/${i}.pdf`, metadata: i === 3 ? { mock: { fail: true } } : {} }));
    const created = await api('POST', '/v1/services/work/tasks', JSON.stringify({ name: 'cli', lists: { input: { embedded: { listItems: items } } } }));
    expect(created.status).toBe(200);
    const tid = created.body.tid as string;
    expect((await json<{ tid: string }[]>('tasks', 'list', '--service', 'work')).map((t) => t.tid)).toContain(tid);
    const done = await json('tasks', 'start', tid, '--watch');
    expect(done).toMatchObject({ tid, status: 'failed', progress: { total: 4, done: 3, failed: 1 } });
    expect(await json('tasks', 'watch', tid)).toMatchObject({ tid, status: 'failed' });
    expect((await wcr('tasks', 'list')).stdout).toMatch(/cli\s+failed\s+3\/4\s+1/);
    const missing = await wcr('tasks', 'watch', '6f1c7c2e-0000-4000-8000-000000000000');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/404 (NO_MATCHING_TASKS|TASK_NOT_FOUND)/);
  });

  it('lists: import a CSV file, export it as CSV to a file and as JSON to stdout', async () => {
    const file = path.join(env.dataDir, 'in.csv');
    const rows = Array.from({ length: 500 }, (_, i) => `https://example.org/doc-${i}.pdf,${i}`);
    await writeFile(file, `item.href,item.metadata.n\n${rows.join('\n')}\n`);
    const list = await json('lists', 'import', file);
    expect(list).toMatchObject({ count: 500 });
    const out = path.join(env.dataDir, 'out.csv');
    const r = await wcr('lists', 'export', list.lid, '--format', 'csv', '-o', out);
    expect(r.code, r.stderr).toBe(0);
    const csv = await readFile(out, 'utf8');
    expect(csv).toContain('https://example.org/doc-499.pdf');
    expect(csv.trim().split('\n')).toHaveLength(501);
    const exported = JSON.parse((await wcr('lists', 'export', list.lid)).stdout);
    expect(exported.embedded.listItems).toHaveLength(500);
    const unknown = await wcr('lists', 'import', path.join(env.dataDir, 'config.yaml'));
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('--format');
  });

  it('on a terminal: a progress bar for an import and a watch, tables on stdout', async () => {
    const file = path.join(env.dataDir, 'tty.csv');
    await writeFile(file, `item.href\n${Array.from({ length: 50 }, (_, i) => `https://example.org/t-${i}.pdf`).join('\n')}\n`);
    // script(1) (util-linux, in every Debian) runs the command on a pseudo-terminal
    const quote = (a: string) => `'${a.replaceAll("'", "'\\''")}'`;
    const onTty = async (...args: string[]) => (await run('script', ['-qec', [process.execPath, BIN, ...args].map(quote).join(' '), '/dev/null'], { env: cliEnv, timeout: 60_000 })).stdout;
    const imported = await onTty('lists', 'import', file);
    expect(imported).toMatch(/import \[[^\]]*\] 100% \d+\/\d+ imported/);
    expect(imported).toMatch(/items\s+50/);
    const created = await api('POST', '/v1/services/work/tasks', JSON.stringify({ name: 'tty', lists: { input: { embedded: { listItems: [{ href: 'https://example.org/a.pdf' }] } } } }));
    const watched = await onTty('tasks', 'start', created.body.tid as string, '--watch');
    expect(watched).toMatch(/items \[[^\]]*\] 100% \d+\/\d+/);
    expect(watched).toMatch(/status\s+(completed|failed)/);
  });

  it('a server that is not there: one clear line', async () => {
    const r = await wcr('--url', 'http://127.0.0.1:9', 'status');
    expect(r.code).not.toBe(0);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('is the server running');
  });
});
