import pg from 'pg';
import { TEST_DATABASE_URL } from '../helpers/env.js';
import { processEnv, startProcess, waitLog, waitReady, type TestProcess } from '../helpers/process.js';

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
  /** Kills the processes, drops the schema and the queues (the DATA_DIR goes when the test file is done). */
  close(): Promise<void>;
}

export async function startCluster(queues: Record<string, unknown>): Promise<Cluster> {
  const pe = await processEnv({ commands: { importAllowPrivate: true }, queues });
  const { schema, prefix, env } = pe;
  const api = await startProcess('api', env);
  await waitReady(api.url!);
  const auth = { authorization: `Bearer ${await pe.token(api.url!)}` };
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
      await db.end().catch(() => {});
      await pe.cleanup();
    },
  };
}
