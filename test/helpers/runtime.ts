import { rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { deepMerge, loadConfig } from '../../src/config/load.js';
import type { AppConfig } from '../../src/config/schema.js';
import { createLogger } from '../../src/logging/logger.js';
import { startRuntime, type Runtime, type RuntimeParts } from '../../src/runtime/runtime.js';
import { TestClient } from './client.js';
import { dropSchema } from './databases.js';
import { TEST_DATABASE_URL, TEST_REDIS_URL, uniqueName } from './env.js';
import { tempDir } from './fs.js';

export interface TestRuntimeOptions {
  /** 'postgres' (default): a schema of its own on the test server; 'pglite': embedded, in DATA_DIR. */
  db?: 'postgres' | 'pglite';
  parts?: RuntimeParts;
  overrides?: Record<string, unknown>;
  /** Reuse another runtime's storage (same schema, data dir and queue prefix). */
  shareWith?: TestRuntime;
}

export interface TestRuntime extends Runtime {
  config: AppConfig;
  client: TestClient;
  dataDir: string;
  schema: string;
  prefix: string;
  token(user: string, roles?: string[], extra?: { expiresIn?: number; email?: string; claims?: Record<string, unknown> }): Promise<string>;
  /** Stops the runtime; with `drop`, also removes its schema, queues and files. */
  close(drop?: boolean): Promise<void>;
}

/** Test services: a store, a filesystem repository, one without commands, one without a repository. */
export const TEST_SERVICES = {
  store: { type: 'store' },
  files: { type: 'filesystem', options: { root: 'files' } },
  nocmd: { type: 'store', options: { commands: [] } },
  mock: { type: 'mock' },
};

/**
 * Starts an isolated runtime: own schema, own queue prefix, own temp DATA_DIR
 * (removed by `close()`, and in any case when the test file is done), port 0.
 */
export async function startTestRuntime(opts: TestRuntimeOptions = {}): Promise<TestRuntime> {
  const shared = opts.shareWith;
  const dataDir = shared?.dataDir ?? await tempDir('wcr-test-');
  const schema = shared?.schema ?? uniqueName('t');
  const prefix = shared?.prefix ?? uniqueName('t');
  const db = opts.db ?? 'postgres';
  const config = loadConfig({
    env: {},
    configDir: path.resolve('config'),
    overrides: {
      dataDir,
      role: 'all',
      logLevel: process.env.TEST_LOG_LEVEL ?? 'silent',
      server: { port: 0, host: '127.0.0.1', shutdownTimeoutMs: 5000 },
      database: db === 'postgres' ? { url: TEST_DATABASE_URL, schema } : { schema: 'public' },
      redis: { url: TEST_REDIS_URL, prefix },
      commands: { importAllowPrivate: true },
      queues: { reconcileIntervalMs: 60_000 },
      // the default configuration's demo printer is left out (tests count printers); a test that wants it gives `services`
      services: { ...TEST_SERVICES, print: { options: { printers: [] } } },
      ...opts.overrides,
      // directory printers live in temp directories of their own (print helpers' `makePrinter`), beside DATA_DIR
      print: deepMerge({ confinement: { directoryRoots: [os.tmpdir()] } }, (opts.overrides?.print ?? {}) as Record<string, unknown>),
    },
  });
  const log = createLogger(config.logLevel);
  const runtime = await startRuntime(config, opts.parts ?? { api: true, workers: true }, log);
  const token = async (user: string, roles = ['admin'], extra: { expiresIn?: number; email?: string; claims?: Record<string, unknown> } = {}) => {
    if (!runtime.services.devIssuer) throw new Error('no development issuer in this runtime');
    return runtime.services.devIssuer.mint({ user, roles, ...extra });
  };
  const close = async (drop = true) => {
    await runtime.stop();
    if (!drop || shared) return;
    if (db === 'postgres') await dropSchema(schema);
    await dropQueues(prefix);
    await rm(dataDir, { recursive: true, force: true });
  };
  return {
    ...runtime, config, dataDir, schema, prefix, token, close,
    client: new TestClient(runtime.url ?? 'http://127.0.0.1:1'),
  };
}

/** Deletes every Redis key under a queue prefix (also how tests "flush Redis" for themselves). */
export async function dropQueues(prefix: string): Promise<number> {
  const redis = new Redis(TEST_REDIS_URL);
  let removed = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) removed += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return removed;
}

/** Polls until `fn` returns a value that is not undefined (bounded). */
export async function eventually<T>(fn: () => Promise<T | undefined>, timeoutMs = 20_000, stepMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
}
