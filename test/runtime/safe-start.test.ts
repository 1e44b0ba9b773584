import { writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { dropSchema } from '../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { tempDir } from '../helpers/fs.js';
import { freePort, killAll, mintToken, startProcess, waitLog, waitReady, type TestProcess } from '../helpers/process.js';
import { dropQueues } from '../helpers/runtime.js';

/**
 * Safe start-up (issue 24, item 2), with real processes: a second deployment
 * (another database) on a Redis prefix that is taken, a second process on an
 * embedded database that is open, and a busy port each stop the start with
 * one line and a non-zero exit; the first keeps running and keeps every write.
 */
/** An embedded-database process migrates a fresh PGlite at start: minutes on a machine shared with a full test run. */
const STARTUP_MS = 240_000;
const prefixes: string[] = [];
const schemas: string[] = [];
afterAll(async () => {
  killAll();
  for (const p of prefixes) await dropQueues(p);
  for (const s of schemas) await dropSchema(s);
});

/** A DATA_DIR with a CONFIG holding `config`. */
async function setup(config: Record<string, unknown>): Promise<{ dataDir: string; env: Record<string, string> }> {
  const dataDir = await tempDir('wcr-safe-');
  const file = path.join(dataDir, 'config.yaml');
  await writeFile(file, stringify(config));
  return { dataDir, env: { DATA_DIR: dataDir, CONFIG: file } };
}

/** Every line the process printed once it has exited (stdout and stderr). */
async function outcome(p: TestProcess): Promise<{ code: number | null; lines: string[] }> {
  const code = await p.exited;
  await new Promise((r) => setTimeout(r, 50)); // the pipes' last chunks
  return { code, lines: p.logs };
}

async function makeDocuments(base: string, token: string, names: string[]): Promise<void> {
  for (const name of names) {
    const res = await fetch(`${base}/v1/services/store/repo`, {
      method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, type: 'document' }),
    });
    expect(res.status).toBe(200);
  }
}

async function documentNames(base: string, token: string): Promise<string[]> {
  const res = await fetch(`${base}/v1/services/store/repo?scope=all&limit=500`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  const body = await res.json() as { embedded?: { entries?: { name: string }[] } };
  return (body.embedded?.entries ?? []).map((e) => e.name).sort();
}

describe('safe start-up', () => {
  it('two deployments (two databases) on one Redis prefix: the second refuses to start, naming redis.prefix', async () => {
    const prefix = uniqueName('ss');
    const [a, b] = [uniqueName('ssa'), uniqueName('ssb')];
    prefixes.push(prefix);
    schemas.push(a, b);
    const first = await setup({ database: { url: TEST_DATABASE_URL, schema: a }, redis: { prefix } });
    const one = await startProcess('all', first.env);
    await waitReady(one.url!, STARTUP_MS);

    const second = await setup({ database: { url: TEST_DATABASE_URL, schema: b }, redis: { prefix } });
    const two = await startProcess('all', second.env);
    const { code, lines } = await outcome(two);
    expect(code).toBe(1);
    const refusal = lines.filter((l) => /redis\.prefix/.test(l));
    expect(refusal, lines.join('\n')).toHaveLength(1);
    expect(refusal[0]).toMatch(new RegExp(`^start failed: redis\\.prefix "${prefix}" on .* holds the queues of another deployment`));
    expect(lines.join('\n')).not.toMatch(/workers running/);
    // the first runs on
    expect((await fetch(`${one.url}/readyz`)).status).toBe(200);
    expect(one.child.exitCode).toBeNull();
  }, 300_000);

  it('two processes on one DATA_DIR (embedded database): the second refuses naming the holder\'s pid; the first keeps every write across a restart', async () => {
    const prefix = uniqueName('ssl');
    prefixes.push(prefix);
    const { dataDir, env } = await setup({ redis: { prefix } });
    const first = await startProcess('all', env);
    await waitReady(first.url!, STARTUP_MS);
    const port = new URL(first.url!).port;
    const token = await mintToken(dataDir, port);
    await makeDocuments(first.url!, token, ['a1', 'a2', 'a3']);

    const second = await startProcess('all', env); // another port (startProcess picks a free one)
    const { code, lines } = await outcome(second);
    expect(code).toBe(1);
    expect(lines, lines.join('\n')).toHaveLength(1);
    expect(lines[0]).toBe(lines[0]!.trim());
    expect(lines[0]).toMatch(new RegExp(`^start failed: the embedded database ${path.join(dataDir, 'pgdata').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is in use by process ${first.child.pid} \\(started [^)]+\\); stop that process, or start this one with another DATA_DIR`));

    // the first goes on writing, stops, and a restart finds every write
    await makeDocuments(first.url!, token, ['b1', 'b2']);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    const again = await startProcess('all', { ...env, PORT: port });
    await waitReady(again.url!, STARTUP_MS);
    expect(await documentNames(again.url!, token)).toEqual(['a1', 'a2', 'a3', 'b1', 'b2']);
    again.child.kill('SIGTERM');
    expect(await again.exited).toBe(0);
  }, 600_000);

  it('a busy port: one line, a non-zero exit, nothing that looks like success', async () => {
    const prefix = uniqueName('ssp');
    prefixes.push(prefix);
    const { env } = await setup({ redis: { prefix } });
    const port = await freePort();
    const taken = net.createServer().listen(port, '127.0.0.1');
    await new Promise((r) => taken.once('listening', r));
    try {
      const p = await startProcess('all', { ...env, PORT: String(port) });
      const { code, lines } = await outcome(p);
      expect(code).toBe(1);
      expect(lines, lines.join('\n')).toEqual([
        `start failed: cannot listen on 127.0.0.1:${port}: the port is in use by another process; set PORT (server.port) to a free port, or stop that process`,
      ]);
    } finally {
      taken.close();
    }
  }, 120_000);

  it('the pretty log format: readable lines instead of JSON (LOG_FORMAT=pretty); JSON when stdout is a pipe', async () => {
    const prefix = uniqueName('ssf');
    const schema = uniqueName('ssf');
    prefixes.push(prefix);
    schemas.push(schema);
    const { env } = await setup({ database: { url: TEST_DATABASE_URL, schema }, redis: { prefix } });
    const pretty = await startProcess('all', { ...env, LOG_FORMAT: 'pretty' });
    const line = await waitLog(pretty, /API listening/, STARTUP_MS);
    expect(line).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: API listening \{"url":"http:\/\/127\.0\.0\.1:\d+\/v1"/);
    expect(() => JSON.parse(line) as unknown).toThrow();
    pretty.child.kill('SIGTERM');
    expect(await pretty.exited).toBe(0);
    const json = await startProcess('all', env); // LOG_FORMAT unset: auto, and stdout is a pipe
    const jline = await waitLog(json, /API listening/, STARTUP_MS);
    expect(JSON.parse(jline)).toMatchObject({ level: 'info', msg: 'API listening' });
    json.child.kill('SIGTERM');
    expect(await json.exited).toBe(0);
  }, 300_000);
});
