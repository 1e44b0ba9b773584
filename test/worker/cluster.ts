import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { TEST_DATABASE_URL, uniqueName } from '../helpers/env.js';
import { startProcess, waitLog, waitReady, type TestProcess } from '../helpers/process.js';
import { dropQueues } from '../helpers/runtime.js';

/**
 * An `api` process and any number of `worker` processes sharing one
 * PostgreSQL schema, one Redis prefix and one DATA_DIR (a CONFIG yaml holds
 * the keys that have no variable), for crash tests that SIGKILL workers.
 */
export interface Cluster {
  api: TestProcess;
  db: pg.Client;
  schema: string;
  prefix: string;
  /** Authorization header of an admin. */
  auth: Record<string, string>;
  startWorker(): Promise<TestProcess>;
  /** JSON request to the api process. */
  call(method: string, url: string, body?: unknown): Promise<{ status: number; body: any }>; // eslint-disable-line @typescript-eslint/no-explicit-any
  close(): Promise<void>;
}

export async function startCluster(queues: Record<string, unknown>): Promise<Cluster> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wcr-cluster-'));
  const schema = uniqueName('cl');
  const prefix = uniqueName('cl');
  const configFile = path.join(dataDir, 'config.yaml');
  await writeFile(configFile, JSON.stringify({
    database: { url: TEST_DATABASE_URL, schema },
    redis: { prefix },
    commands: { importAllowPrivate: true },
    queues,
  }));
  const env = { DATA_DIR: dataDir, CONFIG: configFile };
  const api = await startProcess('api', env);
  await waitReady(api.url!);
  const issuer = await DevIssuer.open(dataDir, `${api.url}/dev-issuer`);
  const auth = { authorization: `Bearer ${await issuer.mint({ user: 'alice', roles: ['admin'] })}` };
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL, options: `-c search_path="${schema}"` });
  await db.connect();
  return {
    api, db, schema, prefix, auth,
    async startWorker() {
      const w = await startProcess('worker', env);
      await waitLog(w, /workers running/);
      return w;
    },
    async call(method, url, body) {
      const res = await fetch(`${api.url}${url}`, {
        method, headers: { ...auth, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(30_000),
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : undefined };
    },
    async close() {
      await db.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
      await db.end().catch(() => {});
      await dropQueues(prefix);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
