import { createHash, randomUUID } from 'node:crypto';
import { lstat, mkdir, readFile, readdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/**
 * What a running server tells local tools (`npm run token`, `wcr`) about its
 * development issuer, so they mint tokens it accepts without sharing its
 * environment: kept beside the key (`DATA_DIR/dev-issuer/issuer.json`) and,
 * while the server runs, in a per-user registry of running servers, which is
 * how a tool finds a DATA_DIR it was not told.
 */
export interface IssuerRecord {
  /** The `iss` of its tokens. */
  issuer: string;
  /** Base URL of its API (`http://127.0.0.1:8080`). */
  api: string;
  dataDir: string;
  /** The configured role names (`auth.roles`). */
  roles: string[];
  /** The `aud` it requires, when configured. */
  audience?: string;
  pid: number;
  started: string;
}

const RECORD = 'issuer.json';
const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

function parseRecord(text: string): IssuerRecord | undefined {
  try {
    const r = JSON.parse(text) as Partial<IssuerRecord> | null;
    if (!r || typeof r.issuer !== 'string' || typeof r.api !== 'string' || typeof r.dataDir !== 'string' || typeof r.pid !== 'number' || !Array.isArray(r.roles)) return undefined;
    return { issuer: r.issuer, api: r.api, dataDir: r.dataDir, roles: r.roles.filter((x) => typeof x === 'string'), audience: typeof r.audience === 'string' ? r.audience : undefined, pid: r.pid, started: String(r.started ?? '') };
  } catch {
    return undefined;
  }
}

/** Written whole under a temporary name, then renamed: a reader sees the old record or the new one. */
async function writeWhole(file: string, rec: IssuerRecord): Promise<void> {
  const tmp = `${file}.${randomUUID()}.tmp`;
  try {
    await writeFile(tmp, JSON.stringify(rec, null, 2), { mode: 0o600 });
    await rename(tmp, file);
  } finally {
    await rm(tmp, { force: true });
  }
}

const readRecord = async (file: string) => parseRecord(await readFile(file, 'utf8').catch(() => ''));

/** The key's directory of a data directory. */
export const issuerDir = (dataDir: string) => path.join(dataDir, 'dev-issuer');

export const writeIssuerRecord = (rec: IssuerRecord) => writeWhole(path.join(issuerDir(rec.dataDir), RECORD), rec);

/** The record a server left beside the key (it may have stopped since). */
export const readIssuerRecord = (dataDir: string) => readRecord(path.join(issuerDir(dataDir), RECORD));

/** Alive, or owned by another user (EPERM): either way not a stale record. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return errno(err) === 'EPERM';
  }
}

/**
 * The per-user directory of running servers: `$XDG_RUNTIME_DIR/workflow-connector-runtime`,
 * else one in the system's temporary directory named for the user. Used only when it is a
 * real directory of this user that nobody else can write (a shared /tmp could hold another
 * user's trap); undefined otherwise.
 */
async function registryDir(runtimeDir: string | undefined): Promise<string | undefined> {
  const uid = process.getuid?.() ?? 0;
  const dir = runtimeDir ? path.join(runtimeDir, 'workflow-connector-runtime') : path.join(os.tmpdir(), `workflow-connector-runtime-${uid}`);
  await mkdir(dir, { recursive: true, mode: 0o700 }).catch(() => undefined);
  const st = await lstat(dir).catch(() => undefined);
  if (!st || !st.isDirectory() || (process.getuid && st.uid !== uid) || (st.mode & 0o022) !== 0) return undefined;
  return dir;
}

const entryName = (dataDir: string) => `${createHash('sha256').update(dataDir).digest('hex').slice(0, 20)}.json`;

/**
 * Records a running server in the registry; the returned function removes it
 * (at shutdown). Best effort: a registry that cannot be written only means
 * tools must be told DATA_DIR.
 */
export async function registerServer(rec: IssuerRecord, runtimeDir: string | undefined): Promise<() => Promise<void>> {
  const dir = await registryDir(runtimeDir);
  if (!dir) return async () => {};
  const file = path.join(dir, entryName(rec.dataDir));
  try {
    await writeWhole(file, rec);
  } catch {
    return async () => {};
  }
  return async () => {
    // only our own entry: a later server on the same DATA_DIR may have replaced it
    const now = await readRecord(file);
    if (now?.pid === rec.pid && now.started === rec.started) await rm(file, { force: true });
  };
}

/** The servers of this user that run now; entries of processes that are gone are removed. */
export async function runningServers(runtimeDir: string | undefined): Promise<IssuerRecord[]> {
  const dir = await registryDir(runtimeDir);
  if (!dir) return [];
  const out: IssuerRecord[] = [];
  for (const name of (await readdir(dir).catch(() => [])).filter((n) => n.endsWith('.json'))) {
    const rec = await readRecord(path.join(dir, name));
    if (rec && processAlive(rec.pid)) out.push(rec);
    else await rm(path.join(dir, name), { force: true }).catch(() => undefined);
  }
  return out.sort((a, b) => a.started.localeCompare(b.started));
}
