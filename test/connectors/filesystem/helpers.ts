import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { EntryRow, RepositoryBackend } from '../../../src/connectors/connector.js';
import { filesystemBackend } from '../../../src/connectors/filesystem/filesystem-connector.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { openPglite } from '../../../src/storage/driver/pglite.js';
import { entryRows } from '../../../src/areas/repository/entry-rows.js';
import { afterAll, afterEach, beforeAll, beforeEach } from 'vitest';
import { migrate } from '../../../src/storage/migrate.js';

/**
 * Registers the hooks every filesystem suite needs: one database per file, a
 * fresh temp tree per test. The setters hand them to the suite's variables.
 */
export function useFsEnv(set: { db: (db: Database) => void; env: (env: Env) => void }): void {
  let db: Database;
  let env: Env;
  beforeAll(async () => {
    db = await openTestDb();
    set.db(db);
  });
  afterAll(async () => {
    await db.close();
  });
  beforeEach(async () => {
    env = await makeEnv(db);
    set.env(env);
  });
  afterEach(async () => {
    await env.cleanup();
  });
}

/** One in-memory database per test file (PGlite start-up is the slow part). */
export async function openTestDb(): Promise<Database> {
  const db = await openPglite({ schema: 'fs_test' });
  await migrate(db);
  return db;
}

/** A fresh temp tree (`root` for the repository, `outside` as the escape target) and service. */
export interface Env {
  dir: string;
  root: string;
  outside: string;
  sid: string;
  db: Database;
  backend: Required<RepositoryBackend>;
  rootRow: EntryRow;
  /** The backend's sync as the repository service runs it: in a transaction, through the area's rows port. */
  sync(collection: EntryRow, recursive?: boolean): Promise<void>;
  /** The backend's refresh, in a transaction, through the area's rows port. */
  refresh(entry: EntryRow): Promise<EntryRow | undefined>;
  cleanup(): Promise<void>;
}

export async function makeEnv(db: Database): Promise<Env> {
  const dir = await realpath(await mkdtemp(join(tmpdir(), 'fs-connector-')));
  const root = join(dir, 'root');
  const outside = join(dir, 'outside');
  await mkdir(root);
  await mkdir(outside);
  const sid = `fs-${randomUUID().slice(0, 8)}`;
  const { rows } = await db.query<EntryRow>(
    `INSERT INTO entries (uuid, sid, parent, name, type, path) VALUES ($1, $2, NULL, '', 'collection', '') RETURNING *`,
    [randomUUID(), sid],
  );
  const backend = filesystemBackend(root) as Required<RepositoryBackend>;
  return {
    dir, root, outside, sid, db, backend,
    rootRow: rows[0]!,
    sync: (collection, recursive = false) => db.transaction((tx) => backend.sync(entryRows(tx, sid), collection, recursive)),
    refresh: (entry) => db.transaction((tx) => backend.refresh(entryRows(tx, sid), entry)),
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Inserts a row directly (what the service does after the backend call). */
export async function insertRow(env: Env, parent: EntryRow, name: string, type: EntryRow['type'], path: string): Promise<EntryRow> {
  const { rows } = await env.db.query<EntryRow>(
    `INSERT INTO entries (uuid, sid, parent, name, type, path) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
    [randomUUID(), env.sid, parent.uuid, name, type, path],
  );
  return rows[0]!;
}

/** Mimics the service's create: backend first, then the row with the returned path. */
export async function createEntry(env: Env, parent: EntryRow, name: string, type: EntryRow['type']): Promise<EntryRow> {
  const draft = { ...parent, uuid: randomUUID(), parent: parent.uuid, name, type, path: null };
  const { path } = await env.backend.create(draft, parent);
  return insertRow(env, parent, name, type, path!);
}

/** A row as the caller would hold it, without touching the database (for refused operations). */
export const fakeRow = (env: Env, path: string, type: EntryRow['type'] = 'document'): EntryRow => ({
  ...env.rootRow, uuid: randomUUID(), parent: env.rootRow.uuid, name: path.split('/').pop()!, type, path,
});

export const body = (text: string | Buffer): Readable => Readable.from([Buffer.from(text)]);

/** The backend's sync of `collection` (and below it, with `recursive`) in a transaction of its own, as a listing runs it. */
export const sync = (env: Env, collection: EntryRow, recursive = false) => env.sync(collection, recursive);

export async function childRows(env: Env, parent: EntryRow | string): Promise<EntryRow[]> {
  const uuid = typeof parent === 'string' ? parent : parent.uuid;
  const { rows } = await env.db.query<EntryRow>('SELECT * FROM entries WHERE sid = $1 AND parent = $2 ORDER BY name', [env.sid, uuid]);
  return rows;
}

export async function allPaths(env: Env): Promise<string[]> {
  const { rows } = await env.db.query<{ path: string }>('SELECT path FROM entries WHERE sid = $1', [env.sid]);
  // Sorted here: database collation would order 'aXb' and 'a_b' differently per locale.
  return rows.map((r) => r.path).sort();
}

/** The AppError code (or errno code) a promise rejects with. */
export async function errorCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}
