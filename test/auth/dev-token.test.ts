import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { tempDir } from '../helpers/fs.js';
import { entrypoint, killAll, processEnv, startProcess, waitLog, waitReady, type ProcessEnv, type TestProcess } from '../helpers/process.js';

/**
 * Tokens that just work (issue 24, item 1): `npm run token` run with none of
 * the server's environment (another directory, no PORT, HOST, DATA_DIR or
 * CONFIG) finds the running server's issuer, key and roles, writes nothing,
 * refuses unknown roles naming the known ones, and says what to set when it
 * finds no server; the server's 401 for a development token minted for
 * another server names the likely cause.
 */

interface Run { code: number | null; stdout: string; stderr: string }

/** The token command as an operator runs it in a shell of their own: only PATH and the session's XDG_RUNTIME_DIR. */
function token(args: string[], opts: { cwd: string; env?: Record<string, string> }): Promise<Run> {
  return new Promise((resolve) => {
    const cli = spawn(process.execPath, [entrypoint('cli'), 'mint-token', ...args], {
      cwd: opts.cwd, env: { PATH: process.env.PATH, ...opts.env },
    });
    let stdout = '';
    let stderr = '';
    cli.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    cli.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    cli.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

let pe: ProcessEnv;
let server: TestProcess;
let runtimeDir: string;
let shell: string;
beforeAll(async () => {
  // the per-user registry of running servers, as one login session has it (isolated from other tests' servers)
  runtimeDir = await tempDir('wcr-xdg-');
  // a directory of the operator's own, outside the checkout: no config/, no data/
  shell = await tempDir('wcr-shell-');
  pe = await processEnv({});
  server = await startProcess('all', { ...pe.env, XDG_RUNTIME_DIR: runtimeDir });
  await waitReady(server.url!);
  await waitLog(server, /API listening/);
}, 180_000);
afterAll(async () => {
  await pe.cleanup();
  killAll();
});

const get = (url: string, t: string) => fetch(url, { headers: { authorization: `Bearer ${t}` } });

describe('npm run token', () => {
  it('with none of the server\'s environment mints a token it accepts, and writes nothing', async () => {
    const { code, stdout, stderr } = await token(['--user', 'alice', '--roles', 'admin'], { cwd: shell, env: { XDG_RUNTIME_DIR: runtimeDir } });
    expect(code, stderr).toBe(0);
    const t = stdout.trim();
    const claims = decodeJwt(t);
    expect(claims.iss).toBe(`${server.url}/dev-issuer`);
    expect(claims.roles).toEqual(['admin']);
    expect(claims.exp! - claims.iat!).toBe(3600); // the default lifetime, 1h
    const res = await get(`${server.url}/v1/services`, t);
    expect(res.status).toBe(200);
    expect((await res.json() as unknown[]).length).toBeGreaterThan(0);
    expect(await readdir(shell)).toEqual([]); // no ./data, no key
    // what the server recorded beside its key
    const rec = JSON.parse(await readFile(path.join(pe.dataDir, 'dev-issuer', 'issuer.json'), 'utf8')) as Record<string, unknown>;
    expect(rec).toMatchObject({ issuer: `${server.url}/dev-issuer`, api: server.url, dataDir: pe.dataDir, roles: ['admin', 'operator', 'user', 'readonly'] });
  }, 60_000);

  it('refuses an unknown role at mint time, naming the configured roles; no token is printed', async () => {
    for (const roles of ['superuser', 'Admin', 'admin,root']) {
      const { code, stdout, stderr } = await token(['--user', 'alice', '--roles', roles], { cwd: shell, env: { XDG_RUNTIME_DIR: runtimeDir } });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/unknown role/);
      expect(stderr).toContain('admin, operator, user, readonly');
    }
  }, 60_000);

  it('--help shows the usage with the lifetime\'s default; --expires sets it; an unknown option is an error with the usage', async () => {
    const help = await token(['--help'], { cwd: shell });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/usage: npm run token -- --user NAME/);
    expect(help.stdout).toMatch(/--expires LIFETIME.*default: 1h/);
    expect(help.stdout).toMatch(/--roles LIST.*default: user/);

    const short = await token(['--user', 'bob', '--roles', 'operator', '--expires', '90m'], { cwd: shell, env: { XDG_RUNTIME_DIR: runtimeDir } });
    expect(short.code, short.stderr).toBe(0);
    const c = decodeJwt(short.stdout.trim());
    expect(c.exp! - c.iat!).toBe(5400);

    const bad = await token(['--user', 'bob', '--expires', 'forever'], { cwd: shell, env: { XDG_RUNTIME_DIR: runtimeDir } });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--expires: "forever" is not a lifetime/);

    const unknown = await token(['--user', 'bob', '--colour'], { cwd: shell });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/Unknown option '--colour'/);
    expect(unknown.stderr).toMatch(/usage:/);
  }, 60_000);

  it('with no running server and no key it says what to set, and creates nothing', async () => {
    const empty = await tempDir('wcr-xdg-empty-');
    const here = await tempDir('wcr-shell-');
    // inside a checkout-like directory (config/ present) and outside one
    await mkdir(path.join(here, 'config'));
    await writeFile(path.join(here, 'config', 'default.yaml'), await readFile('config/default.yaml'));
    for (const cwd of [here, shell]) {
      const { code, stdout, stderr } = await token(['--user', 'alice'], { cwd, env: { XDG_RUNTIME_DIR: empty } });
      expect(code).toBe(2);
      expect(stdout).toBe('');
      if (cwd === here) expect(stderr).toMatch(/no running server .* set DATA_DIR/);
      else expect(stderr).toMatch(/configuration error/);
    }
    expect(await readdir(here)).toEqual(['config']);
    // a DATA_DIR that is no server's: named, and left as it was
    const notData = await tempDir('wcr-nodata-');
    const given = await token(['--user', 'alice'], { cwd: here, env: { XDG_RUNTIME_DIR: empty, DATA_DIR: notData } });
    expect(given.code).toBe(2);
    expect(given.stderr).toContain(`no development issuer key at ${path.join(notData, 'dev-issuer', 'key.json')}`);
    expect(await readdir(notData)).toEqual([]);
  }, 60_000);

  it('several servers running and no DATA_DIR: refused, listing them; DATA_DIR picks one', async () => {
    const xdg = await tempDir('wcr-xdg-two-');
    const reg = path.join(xdg, 'workflow-connector-runtime');
    await mkdir(reg, { mode: 0o700 });
    // the test's own server, and a second "server" (this test process, alive) on another DATA_DIR
    const own = await readFile(path.join(pe.dataDir, 'dev-issuer', 'issuer.json'), 'utf8');
    await writeFile(path.join(reg, 'a.json'), own);
    const other = await tempDir('wcr-other-');
    await DevIssuer.open(other, 'http://127.0.0.1:1/dev-issuer');
    await writeFile(path.join(reg, 'b.json'), JSON.stringify({ issuer: 'http://127.0.0.1:1/dev-issuer', api: 'http://127.0.0.1:1', dataDir: other, roles: ['admin'], pid: process.pid, started: new Date().toISOString() }));
    // and an entry of a process that is gone: ignored and removed
    await writeFile(path.join(reg, 'c.json'), JSON.stringify({ issuer: 'http://127.0.0.1:2/dev-issuer', api: 'http://127.0.0.1:2', dataDir: '/nonexistent', roles: ['admin'], pid: 2 ** 22 + 1, started: '' }));
    const both = await token(['--user', 'alice', '--roles', 'admin'], { cwd: shell, env: { XDG_RUNTIME_DIR: xdg } });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/several servers/);
    expect(both.stderr).toContain(`DATA_DIR=${pe.dataDir}`);
    expect(both.stderr).toContain(`DATA_DIR=${other}`);
    expect((await readdir(reg)).sort()).toEqual(['a.json', 'b.json']);
    const picked = await token(['--user', 'alice', '--roles', 'admin'], { cwd: shell, env: { XDG_RUNTIME_DIR: xdg, DATA_DIR: pe.dataDir } });
    expect(picked.code, picked.stderr).toBe(0);
    expect((await get(`${server.url}/v1/auth`, picked.stdout.trim())).status).toBe(200);
    expect((await get(`${server.url}/v1/services`, picked.stdout.trim())).status).toBe(200);
  }, 60_000);
});

describe('the 401 for a development token that does not match', () => {
  it('names another PORT or HOST for a foreign issuer, another DATA_DIR for a foreign key', async () => {
    const ownKeyOtherPort = await DevIssuer.open(pe.dataDir, 'http://127.0.0.1:1/dev-issuer');
    const res = await get(`${server.url}/v1/services`, await ownKeyOtherPort.mint({ user: 'alice', roles: ['admin'] }));
    expect(res.status).toBe(401);
    const body = await res.json() as { code: string; message: string };
    expect(body.message).toContain('issued by "http://127.0.0.1:1/dev-issuer"');
    expect(body.message).toContain(`this server's development issuer is ${server.url}/dev-issuer`);
    expect(body.message).toMatch(/another PORT or HOST.*npm run token/);

    const otherKey = await DevIssuer.open(await tempDir('wcr-otherkey-'), `${server.url}/dev-issuer`);
    const res2 = await get(`${server.url}/v3/jobs/`, await otherKey.mint({ user: 'alice', roles: ['admin'] }));
    expect(res2.status).toBe(401);
    expect(((await res2.json()) as { message: string }).message).toMatch(/minted with another DATA_DIR.*npm run token/);
  }, 60_000);
});
