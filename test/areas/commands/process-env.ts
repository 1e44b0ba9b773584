import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { stringify } from 'yaml';
import { DevIssuer } from '../../../src/auth/dev-issuer.js';
import { TEST_DATABASE_URL, uniqueName } from '../../helpers/env.js';
import { killAll } from '../../helpers/process.js';
import { dropQueues } from '../../helpers/runtime.js';

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
  token(url: string, user?: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function processEnv(config: Record<string, unknown>): Promise<ProcessEnv> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wcr-proc-'));
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
    async token(url, user = 'alice') {
      const issuer = await DevIssuer.open(dataDir, `${url}/dev-issuer`);
      return issuer.mint({ user, roles: ['admin'] });
    },
    async cleanup() {
      killAll();
      const c = new pg.Client({ connectionString: TEST_DATABASE_URL });
      await c.connect();
      await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await c.end();
      await dropQueues(prefix);
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
