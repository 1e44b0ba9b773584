import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_REDIS_URL, uniqueName } from './helpers/env.js';
import { tempDir } from './helpers/fs.js';
import { freePort, waitReady } from './helpers/process.js';
import { ensureBuilt } from './helpers/build.js';
import { dropQueues } from './helpers/runtime.js';

/**
 * The README runs as written (issue 24, item 3). Every ```sh block of
 * README.md runs, in order, in one bash session (`set -euo pipefail`: a
 * failing command fails the test, naming its block), against a server started
 * the way `scripts/up` starts it (`node dist/src/entrypoints/server.js` with
 * the demo configuration, the embedded database, DATA_DIR unset so `./data`).
 * Conventions, for whoever edits the README:
 *
 * - `<!-- readme-test: skip -->` on the line before a block: not run (the
 *   blocks that start servers or containers: `scripts/up`, `docker compose`).
 * - `<!-- readme-test: expect /regex/flags -->` lines before a block: its
 *   output (stdout and stderr) must match each; the essentials (a status
 *   code, a state, a field), not ids or times.
 * - `localhost:8080` and `127.0.0.1:8080` become the test server's address.
 *
 * The session runs in a directory that looks like the checkout (its entries
 * linked, `data/` its own), so files the README makes stay out of the
 * checkout, and in a login session of its own (XDG_RUNTIME_DIR), where
 * `npm run token` finds the server as it would in a reader's second shell.
 * The server's CONFIG holds what isolates it (a queue prefix of its own) and
 * what the README's tour says to set (`commands.importAllowPrivate: true`).
 */
const ROOT = path.resolve('.');
const README = path.join(ROOT, 'README.md');

export interface ReadmeBlock {
  /** 1-based line of the opening fence. */
  line: number;
  code: string;
  skip: boolean;
  expect: RegExp[];
}

/** The README's shell blocks with their markers (the comment lines right above the fence). */
export function readmeBlocks(text: string): ReadmeBlock[] {
  const lines = text.split('\n');
  const blocks: ReadmeBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const fence = /^```(sh|bash|shell)\s*$/.exec(lines[i]!);
    if (!fence) {
      if (/^```/.test(lines[i]!)) { // another language: skip to its end
        for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++);
      }
      continue;
    }
    const markers: string[] = [];
    for (let j = i - 1; j >= 0 && /^<!--\s*readme-test:.*-->\s*$/.test(lines[j]!); j--) markers.unshift(lines[j]!);
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    const block: ReadmeBlock = { line: start + 1, code: body.join('\n'), skip: false, expect: [] };
    for (const m of markers) {
      const what = /^<!--\s*readme-test:\s*(.*?)\s*-->\s*$/.exec(m)![1]!;
      if (what === 'skip') block.skip = true;
      else if (what.startsWith('expect ')) {
        const re = /^expect \/(.*)\/([a-z]*)$/.exec(what);
        if (!re) throw new Error(`README.md:${start + 1}: a marker "expect" needs /regex/flags: ${m}`);
        block.expect.push(new RegExp(re[1]!, re[2]));
      } else throw new Error(`README.md:${start + 1}: unknown readme-test marker: ${m}`);
    }
    blocks.push(block);
  }
  return blocks;
}

let sandbox: string;
let runtimeDir: string;
let port: number;
let server: ReturnType<typeof spawn> | undefined;
const serverLog: string[] = [];
const prefix = uniqueName('readme');

beforeAll(async () => {
  ensureBuilt();
  sandbox = await tempDir('wcr-readme-');
  runtimeDir = await tempDir('wcr-readme-xdg-');
  for (const name of await readdir(ROOT)) {
    if (['data', '.git', '.test-data', '.test-results'].includes(name)) continue;
    await symlink(path.join(ROOT, name), path.join(sandbox, name));
  }
  const config = path.join(runtimeDir, 'readme.yaml');
  await writeFile(config, stringify({ redis: { url: TEST_REDIS_URL, prefix }, commands: { importAllowPrivate: true } }));
  port = await freePort();
  server = spawn(process.execPath, ['dist/src/entrypoints/server.js'], {
    cwd: sandbox,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), CONFIG: config, XDG_RUNTIME_DIR: runtimeDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  server.stdout!.on('data', (c: Buffer) => serverLog.push(c.toString()));
  server.stderr!.on('data', (c: Buffer) => serverLog.push(c.toString()));
  await waitReady(`http://127.0.0.1:${port}`, 180_000);
}, 600_000);

afterAll(async () => {
  if (server && server.exitCode === null) {
    const gone = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 20_000))]);
    if (server.exitCode === null) server.kill('SIGKILL');
  }
  await dropQueues(prefix);
});

/** One bash session; `run` sends a block and resolves with what it printed once it is done. */
function bashSession(cwd: string, env: Record<string, string | undefined>) {
  const bash = spawn('bash', ['--noprofile', '--norc'], { cwd, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let waiter: (() => void) | undefined;
  const onData = (c: Buffer) => {
    out += c.toString();
    waiter?.();
  };
  bash.stdout.on('data', onData);
  bash.stderr.on('data', onData);
  let exited: number | null | undefined;
  bash.on('exit', (code) => {
    exited = code;
    waiter?.();
  });
  bash.stdin.write('set -euo pipefail\nexec 2>&1\n');
  let n = 0;
  return {
    run(code: string, timeoutMs: number): Promise<{ output: string; failed?: string }> {
      const mark = `@@readme-block-${++n}-done@@`;
      const from = out.length;
      bash.stdin.write(`${code}\nprintf '\\n%s\\n' '${mark}'\n`);
      return new Promise((resolve) => {
        const timer = setTimeout(() => done(`did not finish within ${timeoutMs} ms`), timeoutMs);
        const done = (failed?: string) => {
          clearTimeout(timer);
          waiter = undefined;
          const end = out.indexOf(mark, from);
          resolve({ output: out.slice(from, end >= 0 ? end : undefined).trim(), failed });
        };
        waiter = () => {
          if (out.indexOf(mark, from) >= 0) done();
          else if (exited !== undefined) done(`a command failed (bash exited ${exited})`);
        };
        waiter();
      });
    },
    close: () => bash.kill('SIGKILL'),
  };
}

describe('README.md', () => {
  const blocks = readmeBlocks(readFileSync(README, 'utf8'));

  it('has shell blocks, each run or marked skip', () => {
    expect(blocks.filter((b) => !b.skip).length).toBeGreaterThan(5);
    expect(blocks.filter((b) => b.skip).map((b) => b.code)).toEqual(expect.arrayContaining([expect.stringMatching(/scripts\/up/)]));
  });

  it('every example runs as written against a started server', async () => {
    const session = bashSession(sandbox, {
      PATH: process.env.PATH, HOME: process.env.HOME, XDG_RUNTIME_DIR: runtimeDir, TERM: 'dumb', LANG: 'C.UTF-8',
    });
    // README_TRANSCRIPT=<file>: every block and its output, for whoever edits the README
    const transcript: string[] = [];
    try {
      for (const block of blocks.filter((b) => !b.skip)) {
        const code = block.code.replace(/\b(localhost|127\.0\.0\.1):8080\b/g, `127.0.0.1:${port}`);
        const { output, failed } = await session.run(code, 120_000);
        transcript.push(`### README.md:${block.line}\n${code}\n--- output ---\n${output}\n`);
        const where = `README.md:${block.line}\n--- block ---\n${code}\n--- output ---\n${output.slice(-4000)}`;
        expect(failed, `${where}\n--- server ---\n${serverLog.join('').slice(-3000)}`).toBeUndefined();
        for (const re of block.expect) expect(output, where).toMatch(re);
      }
    } finally {
      session.close();
      if (process.env.README_TRANSCRIPT) await writeFile(process.env.README_TRANSCRIPT, transcript.join('\n'));
    }
  }, 900_000);
});
