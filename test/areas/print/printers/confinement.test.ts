import { mkdir, readdir, rename, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevIssuer } from '../../../../src/auth/dev-issuer.js';
import { dropSchema } from '../../../helpers/databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from '../../../helpers/env.js';
import { tempDir } from '../../../helpers/fs.js';
import { killAll, killProcess, startProcess, waitReady, type TestProcess } from '../../../helpers/process.js';
import { dropQueues, eventually } from '../../../helpers/runtime.js';
import { TcpSink } from '../../../helpers/tcp-sink.js';

/**
 * Printer connections are confined (issue 20, item 5): directory printers
 * only under the configured roots, network printers never at the service's
 * own Redis, PostgreSQL or API address nor at link-local, unspecified,
 * multicast or broadcast addresses, and an operator's allow/deny list on
 * top. Checked when a printer is created or changed (400) and again before
 * every connect (a stored printer that the rules no longer allow fails its
 * delivery and its device check without a connection being opened).
 *
 * A real server process on its own schema, queue prefix and DATA_DIR. Every
 * connection a test makes or lets the server make goes to 127.0.0.1: the
 * refused targets are refused before any connect, so nothing is opened to
 * them (and the sink counts what reaches it).
 */
const schema = uniqueName('conf');
const prefix = uniqueName('conf');
let dataDir: string;
let proc: TestProcess;
let sink: TcpSink;
let admin: string;
let bob: string;

async function writeConfig(file: string, extra: Record<string, unknown>): Promise<string> {
  await writeFile(file, stringify({
    database: { url: TEST_DATABASE_URL, schema },
    redis: { url: TEST_REDIS_URL, prefix },
    printDispatch: { retryBaseMs: 200, retryMaxMs: 1000 },
    ...extra,
  }));
  return file;
}

async function start(config: string): Promise<TestProcess> {
  const p = await startProcess('all', { DATA_DIR: dataDir, CONFIG: config });
  await waitReady(p.url!);
  const issuer = await DevIssuer.open(dataDir, `${p.url}/dev-issuer`);
  admin = await issuer.mint({ user: 'alice', roles: ['admin'] });
  bob = await issuer.mint({ user: 'bob', roles: ['user'] });
  return p;
}

async function call(method: string, route: string, opts: { json?: unknown; body?: string; token?: string } = {}): Promise<{ status: number; body: any }> { // eslint-disable-line @typescript-eslint/no-explicit-any
  const headers: Record<string, string> = { authorization: `Bearer ${opts.token ?? admin}` };
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

const pp = (name: string) => `/v3/printers/${encodeURIComponent(name)}`;
const createPrinter = (name: string, connection: string) => call('POST', '/v3/printers/', { json: { name, connection } });
const submit = (printer: string, text: string, token = bob) => call('POST', `/v3/jobs/?${new URLSearchParams({ printer, name: 'doc.pdf' })}`, { body: text, token });
const jobWhen = (id: number, done: (j: { status: string }) => boolean) => eventually(async () => {
  const j = (await call('GET', `/v3/jobs/${id}`)).body as { status: string; message: string | null };
  return done(j) ? j : undefined;
}, 60_000, 100);

function expectForbidden(res: { status: number; body: any }, what: string): void { // eslint-disable-line @typescript-eslint/no-explicit-any
  expect(res.status, `${what}: ${JSON.stringify(res.body)}`).toBe(400);
  expect(res.body.code, what).toBe('CONNECTION_FORBIDDEN');
}

const redis = new URL(TEST_REDIS_URL);
const database = new URL(TEST_DATABASE_URL);
const bracket = (h: string) => (h.includes(':') ? `[${h}]` : h);

beforeAll(async () => {
  dataDir = await tempDir('wcr-conf-');
  sink = await TcpSink.start();
  proc = await start(await writeConfig(path.join(dataDir, 'first.yaml'), {}));
}, 180_000);

afterAll(async () => {
  killAll();
  await sink?.close();
  await dropSchema(schema);
  await dropQueues(prefix);
});

describe('with the default rules', () => {
  it('confinement: a directory printer outside DATA_DIR (/etc, /, another directory, a symlink out of DATA_DIR) is refused with 400 CONNECTION_FORBIDDEN, on create and on replace', async () => {
    const outside = await tempDir('wcr-conf-outside-');
    await symlink('/etc', path.join(dataDir, 'etc-link'));
    for (const connection of ['file:///etc', 'file:///', `file://${outside}`, `file://${dataDir}/etc-link`, `file://${dataDir}/etc-link/cron.d`, `file://${dataDir}/../`]) {
      expectForbidden(await createPrinter(uniqueName('dir'), connection), connection);
    }
    await mkdir(path.join(dataDir, 'spool'));
    const ok = await createPrinter('inside', `file://${dataDir}/spool`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expectForbidden(await call('PUT', pp('inside'), { json: { connection: 'file:///etc' } }), 'replace with file:///etc');
    expect((await call('GET', pp('inside'))).body.connection).toBe(`file://${dataDir}/spool`);
    // and the device check of the allowed one still works
    const checked = await call('PUT', `${pp('inside')}/checkPhysical`);
    expect(checked.status).toBe(200);
    expect(checked.body.physical.reachable).toBe(true);
  });

  it('confinement: a socket printer at the service\'s own Redis, PostgreSQL or API address is refused, however the address is spelled', async () => {
    const api = new URL(proc.url!);
    const own: [string, string][] = [
      [bracket(redis.hostname), redis.port || '6379'],
      [bracket(database.hostname), database.port || '5432'],
      [api.hostname, api.port],
    ];
    const connections = own.flatMap(([host, port]) => [`socket://${host}:${port}`]);
    if (redis.hostname === '127.0.0.1' || redis.hostname === 'localhost') {
      const port = redis.port || '6379';
      // a name, another loopback address, the IPv4-mapped and IPv6 spellings of this host
      connections.push(`socket://localhost:${port}`, `socket://127.0.0.2:${port}`, `socket://[::ffff:127.0.0.1]:${port}`, `socket://[::ffff:7f00:1]:${port}`, `socket://[::1]:${port}`);
    }
    for (const connection of connections) expectForbidden(await createPrinter(uniqueName('own'), connection), connection);
  });

  it('confinement: link-local (cloud metadata), unspecified, multicast and broadcast targets are refused at creation', async () => {
    for (const connection of [
      'socket://169.254.169.254:80', 'socket://[::ffff:169.254.169.254]:80', 'socket://[fe80::1]:9100', 'socket://[fe80::1%25eth0]:9100',
      'socket://0.0.0.0:9100', 'socket://[::]:9100', 'socket://224.0.0.1:9100', 'socket://[ff02::1]:9100', 'socket://255.255.255.255:9100',
    ]) {
      const res = await createPrinter(uniqueName('bad'), connection);
      // a URL the parser does not take (the zone id) is 400 INVALID_CONNECTION before the rule; either way nothing is created
      if (res.body?.code === 'INVALID_CONNECTION') expect(res.status).toBe(400);
      else expectForbidden(res, connection);
    }
  });

  it('confinement: a loopback socket printer stays allowed and prints', async () => {
    expect((await createPrinter('loop', sink.connection)).status).toBe(200);
    const job = await submit('loop', '%PDF-1.4 loopback');
    expect(job.status).toBe(201);
    await jobWhen(job.body.id, (j) => j.status === 'processed');
    expect(sink.connections.some((c) => c.chunks.join('') === '%PDF-1.4 loopback')).toBe(true);
  });

  it('confinement: a directory swapped for a symlink out of DATA_DIR after creation fails its delivery and device check, nothing written', async () => {
    const outside = await tempDir('wcr-conf-target-');
    await mkdir(path.join(dataDir, 'swap'));
    expect((await createPrinter('swap', `file://${dataDir}/swap`)).status).toBe(200);
    await rename(path.join(dataDir, 'swap'), path.join(dataDir, 'swap-old'));
    await symlink(outside, path.join(dataDir, 'swap'));
    const checked = await call('PUT', `${pp('swap')}/checkPhysical`);
    expect(checked.body.physical.reachable).toBe(false);
    expect(checked.body.physical.message).toMatch(/not allowed/);
    const job = await submit('swap', '%PDF-1.4 escaped');
    const done = await jobWhen(job.body.id, (j) => j.status === 'error');
    expect(done.message).toMatch(/not allowed/);
    expect(await readdir(outside)).toEqual([]);
  });
});

describe('after a restart with tighter rules (an allow and deny list, other roots)', () => {
  it('confinement: stored printers the rules no longer allow fail their device check and deliveries before any connect; creation follows the lists', async () => {
    await mkdir(path.join(dataDir, 'kept'));
    expect((await createPrinter('kept-dir', `file://${dataDir}/kept`)).status).toBe(200);
    expect((await createPrinter('kept-sock', sink.connection)).status).toBe(200);
    await killProcess(proc);
    const before = sink.connections.length;
    const other = path.join(dataDir, 'printers');
    // 'printed' (under DATA_DIR): the default configuration's demo print service keeps its printer there
    proc = await start(await writeConfig(path.join(dataDir, 'second.yaml'), {
      print: { confinement: { directoryRoots: [other, 'printed'], allow: ['127.0.0.0/8', { cidr: '::1/128', ports: [9100] }], deny: [{ cidr: '127.0.0.1/32', ports: [sink.port] }] } },
    }));
    for (const name of ['kept-dir', 'kept-sock']) {
      const checked = await call('PUT', `${pp(name)}/checkPhysical`);
      expect(checked.status).toBe(200);
      expect(checked.body.physical.reachable, name).toBe(false);
      expect(checked.body.physical.message, name).toMatch(/not allowed/);
      const job = await submit(name, `%PDF-1.4 to ${name}`);
      expect(job.status).toBe(201);
      const done = await jobWhen(job.body.id, (j) => j.status === 'error');
      expect(done.message, name).toMatch(/not allowed/);
    }
    expect(sink.connections.length).toBe(before);
    expect(await readdir(path.join(dataDir, 'kept'))).toEqual([]);
    // creation: the deny list, the allow list (a private address outside it: refused, not contacted), the new roots
    expectForbidden(await createPrinter('denied', sink.connection), 'denied port');
    expectForbidden(await createPrinter('not-allowed', 'socket://192.168.1.10:9100'), 'outside the allow list');
    expectForbidden(await createPrinter('v6-port', 'socket://[::1]:9101'), 'allowed address, other port');
    expectForbidden(await createPrinter('old-root', `file://${dataDir}/kept`), 'outside the new roots');
    expect((await createPrinter('new-root', `file://${other}/out`)).status).toBe(200);
    expect((await createPrinter('allowed', 'socket://127.0.0.1:9')).status).toBe(200);
  });
});
