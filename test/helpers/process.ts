import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { TEST_REDIS_URL } from './env.js';
import { eventually } from './runtime.js';

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

/** A free loopback port (closed again before it is returned). */
export const freePort = () => new Promise<number>((resolve) => {
  const s = http.createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address() as { port: number };
    s.close(() => resolve(port));
  });
});

/**
 * Starts `src/entrypoints/<role>.ts` under tsx with a clean environment:
 * DATA_DIR, REDIS_URL (the test Redis unless given), LOG_LEVEL=info, plus
 * `env` (DATABASE_URL, PORT, CONFIG: a YAML file for the rest, such as
 * `database.schema` and `redis.prefix`).
 */
export async function startProcess(role: 'all' | 'api' | 'worker' | 'server', env: Record<string, string>): Promise<TestProcess> {
  const port = env.PORT ?? (role === 'worker' ? undefined : String(await freePort()));
  const logs: string[] = [];
  const child = spawn(process.execPath, ['--import', 'tsx', `src/entrypoints/${role}.ts`], {
    env: { PATH: process.env.PATH, REDIS_URL: TEST_REDIS_URL, LOG_LEVEL: 'info', ...(port ? { PORT: port } : {}), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  child.stdout!.on('data', (c: Buffer) => logs.push(...c.toString().split('\n').filter(Boolean)));
  child.stderr!.on('data', (c: Buffer) => logs.push(...c.toString().split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, logs, exited, url: port ? `http://127.0.0.1:${port}` : undefined };
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

/** SIGKILLs every process still running (call in afterAll). */
export function killAll(): void {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
