import { spawn, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { stringify } from 'yaml';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { ensureBuilt, ROOT } from './build.js';
import { dropSchema } from './databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from './env.js';
import { tempDir } from './fs.js';
import { dropQueues, eventually } from './runtime.js';

/**
 * Real entrypoint processes for crash and multi-process tests: spawn one with
 * `startProcess`, kill it with `proc.child.kill('SIGKILL')`, and always call
 * `killAll()` in `afterAll`.
 */
export interface TestProcess {
  child: ChildProcess;
  /** stdout and stderr lines (pino JSON when LOG_LEVEL is set). */
  logs: string[];
  exited: Promise<number | null>;
  /** Base URL when the role serves HTTP. */
  url?: string;
}

const children: ChildProcess[] = [];

let built = false;
/**
 * The compiled entrypoint `dist/src/entrypoints/<name>.js`, run by plain
 * node as in production: a process starts in about half the time (and CPU)
 * it takes under tsx, which the crash tests' many starts add up. Built once
 * when `src/` is newer (`scripts/test` builds before any test file runs).
 */
export function entrypoint(name: string): string {
  if (!built) ensureBuilt();
  built = true;
  return path.join(ROOT, 'dist/src/entrypoints', `${name}.js`);
}

/** A free loopback port (closed again before it is returned). */
export const freePort = () => new Promise<number>((resolve) => {
  const s = http.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number };
    s.close(() => resolve(port));
  });
});

/**
 * Starts the entrypoint `<role>` (compiled, `entrypoint`) with a clean environment:
 * DATA_DIR, REDIS_URL (the test Redis unless given), LOG_LEVEL=info, plus
 * `env` (DATABASE_URL, PORT, CONFIG: a YAML file for the rest, such as
 * `database.schema` and `redis.prefix`).
 */
export async function startProcess(role: 'all' | 'api' | 'worker' | 'server', env: Record<string, string>): Promise<TestProcess> {
  const port = env.PORT ?? (role === 'worker' ? undefined : String(await freePort()));
  const logs: string[] = [];
  const child = spawn(process.execPath, [entrypoint(role)], {
    env: { PATH: process.env.PATH, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'info', ...(port ? { PORT: port } : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout!.on('data', (c: Buffer) => logs.push(...c.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (c: Buffer) => logs.push(...c.toString().split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, logs, exited, url: port ? `http://127.0.0.1:${port}` : undefined };
}

/**
 * A token for alice (admin) minted by the CLI (`cli.ts mint-token`) from the
 * development issuer key in `dataDir`, as an operator would mint one.
 */
export function mintToken(dataDir: string, port: number | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const cli = spawn(process.execPath, [entrypoint('cli'), 'mint-token', '--user', 'alice', '--roles', 'admin'], {
      env: { PATH: process.env.PATH, DATA_DIR: dataDir, PORT: String(port) },
    });
    let out = '';
    cli.stdout.on('data', (c: Buffer) => (out += c.toString()));
    cli.on('exit', (code) => (code === 0 ? resolve(out.trim()) : reject(new Error(`cli exited ${code}`))));
  });
}

/** Resolves once `GET /readyz` answers 200 (processes start slowly under a loaded test run). */
export async function waitReady(url: string, timeoutMs = 120_000): Promise<void> {
  await eventually(async () => {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    await res?.arrayBuffer();
    return res?.status === 200 ? true : undefined;
  }, timeoutMs, 250);
}

/** Resolves once a log line matches (e.g. `/workers running/`). */
export async function waitLog(p: TestProcess, pattern: RegExp, timeoutMs = 120_000): Promise<string> {
  return eventually(async () => p.logs.find((l) => pattern.test(l)), timeoutMs, 100);
}

/** SIGKILLs one process and resolves once it is gone. */
export async function killProcess(p: TestProcess): Promise<void> {
  p.child.kill('SIGKILL');
  await p.exited;
}

/** SIGKILLs every process still running (call in afterAll). */
export function killAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/**
 * Storage and configuration for real entrypoint processes: a DATA_DIR, a
 * PostgreSQL schema and a Redis prefix of their own, written into a CONFIG
 * file, plus tokens from the development issuer that the processes share.
 */
export interface ProcessEnv {
  dataDir: string;
  schema: string;
  prefix: string;
  /** Environment for `startProcess`. */
  env: Record<string, string>;
  /** A development-issuer token for `user` (default alice) with `roles` (default admin). */
  token(url: string, user?: string, roles?: string[]): Promise<string>;
  /** Kills the processes, drops the schema and the queues (the DATA_DIR goes when the test file is done). */
  cleanup(): Promise<void>;
}

/** A ProcessEnv whose CONFIG holds `config` besides the database and Redis keys. */
export async function processEnv(config: Record<string, unknown>): Promise<ProcessEnv> {
  const dataDir = await tempDir('wcr-proc-');
  const schema = uniqueName('pe');
  const prefix = uniqueName('pe');
  const file = path.join(dataDir, 'config.yaml');
  await writeFile(file, stringify({
    database: { url: TEST_DATABASE_URL, schema },
    redis: { prefix },
    ...config,
  }));
  return {
    dataDir, schema, prefix,
    env: { DATA_DIR: dataDir, CONFIG: file },
    async token(url, user = 'alice', roles = ['admin']) {
      const issuer = await DevIssuer.open(dataDir, `${url}/dev-issuer`);
      return issuer.mint({ user, roles });
    },
    async cleanup() {
      killAll();
      await dropSchema(schema);
      await dropQueues(prefix);
    },
  };
}
