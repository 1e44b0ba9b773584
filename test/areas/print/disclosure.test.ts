import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { DevIssuer } from '../../../src/auth/dev-issuer.js';
import { dropSchema } from '../../helpers/databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from '../../helpers/env.js';
import { tempDir } from '../../helpers/fs.js';
import { killAll, startProcess, waitReady, type TestProcess } from '../../helpers/process.js';
import { dropQueues, eventually } from '../../helpers/runtime.js';

/**
 * What the print API shows to whom (issue 20, item 6), against a real server
 * process on its own schema, queue prefix and DATA_DIR: a plain user's view
 * of a printer's log holds their own jobs' lines and the printer's own
 * lines, never another user's; job messages and log lines name no absolute
 * server path; another user's job is absent (404 JOB_NOT_FOUND, as tasks and
 * lists answer), so sequential ids do not tell which jobs exist.
 */
const schema = uniqueName('disc');
const prefix = uniqueName('disc');
let dataDir: string;
let proc: TestProcess;
const tokens: Record<string, string> = {};

async function call(user: string, method: string, route: string, opts: { json?: unknown; body?: string } = {}): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const headers: Record<string, string> = { authorization: `Bearer ${tokens[user]}` };
  let body: string | undefined = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (body !== undefined) headers['content-type'] = 'application/pdf';
  const res = await fetch(`${proc.url}${route}`, { method, headers, body, signal: AbortSignal.timeout(20_000) });
  const text = await res.text();
  let parsed: unknown = text;
  try { parsed = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, body: parsed };
}

const submit = (user: string, printer: string, name: string) =>
  call(user, 'POST', `/v3/jobs/?${new URLSearchParams({ printer, name })}`, { body: `%PDF-1.4 ${name}` });
const jobWhen = (id: number, done: (j: { status: string }) => boolean) => eventually(async () => {
  const j = (await call('alice', 'GET', `/v3/jobs/${id}`)).body as { status: string; message: string | null };
  return done(j) ? j : undefined;
}, 60_000, 100);

let bobJob: number;
let carolJob: number;

beforeAll(async () => {
  dataDir = await tempDir('wcr-disc-');
  const config = path.join(dataDir, 'config.yaml');
  await writeFile(config, stringify({
    database: { url: TEST_DATABASE_URL, schema },
    redis: { url: TEST_REDIS_URL, prefix },
    printDispatch: { retryBaseMs: 60_000, retryMaxMs: 60_000 },
  }));
  proc = await startProcess('all', { DATA_DIR: dataDir, CONFIG: config });
  await waitReady(proc.url!);
  const issuer = await DevIssuer.open(dataDir, `${proc.url}/dev-issuer`);
  tokens.alice = await issuer.mint({ user: 'alice', roles: ['admin'] });
  tokens.bob = await issuer.mint({ user: 'bob', roles: ['user'] });
  tokens.carol = await issuer.mint({ user: 'carol', roles: ['user'] });
  await mkdir(path.join(dataDir, 'out'));
  expect((await call('alice', 'POST', '/v3/printers/', { json: { name: 'shared', connection: `file://${dataDir}/out` } })).status).toBe(200);
  bobJob = (await submit('bob', 'shared', 'bob-salary.pdf')).body.id;
  carolJob = (await submit('carol', 'shared', 'carol-notes.pdf')).body.id;
  await jobWhen(bobJob, (j) => j.status === 'processed');
  await jobWhen(carolJob, (j) => j.status === 'processed');
}, 180_000);

afterAll(async () => {
  killAll();
  await dropSchema(schema);
  await dropQueues(prefix);
});

it('disclosure: a plain user sees their own jobs\' lines and the printer\'s own lines in a printer\'s log, never another user\'s job', async () => {
  type Line = { text: string; job?: number };
  const all = (await call('alice', 'GET', '/v3/printers/shared/logs')).body as Line[];
  expect(all.some((l) => l.job === bobJob)).toBe(true);
  expect(all.some((l) => l.job === carolJob)).toBe(true);
  const carol = await call('carol', 'GET', '/v3/printers/shared/logs');
  expect(carol.status).toBe(200);
  const lines = carol.body as Line[];
  expect(lines.some((l) => l.job === carolJob)).toBe(true);
  expect(lines.filter((l) => l.job !== undefined && l.job !== carolJob)).toEqual([]);
  expect(lines.some((l) => l.job === undefined && /created by alice/.test(l.text))).toBe(true);
  expect(JSON.stringify(lines)).not.toMatch(/bob/);
  const bob = (await call('bob', 'GET', '/v3/printers/shared/logs')).body as Line[];
  expect(bob.filter((l) => l.job !== undefined && l.job !== bobJob)).toEqual([]);
  expect(JSON.stringify(bob)).not.toMatch(/carol/);
});

it('disclosure: job messages and log lines show no absolute server path, for a delivered job and for a failed one', async () => {
  const job = (await call('bob', 'GET', `/v3/jobs/${bobJob}`)).body as { message: string };
  expect(job.message).toBeTruthy();
  expect(job.message).not.toContain(dataDir);
  expect(job.message).toMatch(/bob-salary\.pdf/);
  const log = (await call('bob', 'GET', `/v3/jobs/${bobJob}/logs`)).body as { text: string }[];
  expect(JSON.stringify(log)).not.toContain(dataDir);
  // a printer whose directory is missing: the job is postponed with a message, the printer shows the device error
  expect((await call('alice', 'POST', '/v3/printers/', { json: { name: 'gone', connection: `file://${dataDir}/missing` } })).status).toBe(200);
  const failed = (await submit('bob', 'gone', 'bob-draft.pdf')).body.id as number;
  const postponed = await jobWhen(failed, (j) => j.status === 'postponed');
  expect(postponed.message).toBeTruthy();
  expect(postponed.message).not.toContain(dataDir);
  expect(JSON.stringify((await call('bob', 'GET', `/v3/jobs/${failed}/logs`)).body)).not.toContain(dataDir);
  const printer = (await call('bob', 'GET', '/v3/printers/gone')).body as { error: string | null };
  expect(printer.error).toBeTruthy();
  expect(printer.error).not.toContain(dataDir);
  const check = (await call('alice', 'PUT', '/v3/printers/gone/checkPhysical')).body as { physical: { message: string } };
  expect(check.physical.message).not.toContain(dataDir);
});

it('disclosure: another user\'s job answers 404 JOB_NOT_FOUND on every job route, as for a job that does not exist', async () => {
  const routes: [string, string, unknown?][] = [
    ['GET', ''], ['GET', '/logs'], ['GET', '/logfile'], ['GET', '/collect'], ['GET', '/pageinfo'],
    ['PUT', '/cancel'], ['PUT', '/pause'], ['PUT', '/resume'], ['PUT', '/repeat'],
    ['PUT', '/move', { printer: 'shared' }], ['PUT', '/tempfiles', { keep: true }], ['DELETE', ''],
  ];
  for (const [method, tail, json] of routes) {
    const theirs = await call('carol', method, `/v3/jobs/${bobJob}${tail}`, { json });
    const none = await call('carol', method, `/v3/jobs/99999999${tail}`, { json });
    expect(theirs.status, `${method} ${tail}: ${JSON.stringify(theirs.body)}`).toBe(404);
    expect(theirs.body.code, `${method} ${tail}`).toBe('JOB_NOT_FOUND');
    expect(none.status).toBe(404);
    expect(Object.keys(theirs.body).sort()).toEqual(Object.keys(none.body).sort());
  }
  // the owner and an admin still reach it
  expect((await call('bob', 'GET', `/v3/jobs/${bobJob}`)).status).toBe(200);
  expect((await call('alice', 'GET', `/v3/jobs/${bobJob}`)).status).toBe(200);
});
