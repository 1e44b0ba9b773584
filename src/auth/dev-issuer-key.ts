import { randomUUID } from 'node:crypto';
import { link, lstat, mkdir, open, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, type JWK } from 'jose';

export const ALG = 'ES256';

/** The development issuer's key pair as kept in `DATA_DIR/dev-issuer/key.json`. */
export interface StoredKey {
  privateJwk: JWK;
  publicJwk: JWK;
}

const TMP_PREFIX = '.key-';
/** A temporary key file older than this was left by a crash (a write takes milliseconds). */
const STALE_TMP_MS = 60_000;

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code;

function parseKey(text: string): StoredKey | undefined {
  try {
    const k = JSON.parse(text) as Partial<StoredKey> | null;
    const ok = (j: unknown): j is JWK => typeof j === 'object' && j !== null && typeof (j as JWK).kty === 'string' && typeof (j as JWK).kid === 'string';
    return k && ok(k.privateJwk) && ok(k.publicJwk) && typeof k.privateJwk.d === 'string' ? { privateJwk: k.privateJwk, publicJwk: k.publicJwk } : undefined;
  } catch {
    return undefined;
  }
}

type ReadResult = { key: StoredKey } | { missing: true } | { brokenIno: number };

async function readKey(file: string): Promise<ReadResult> {
  let handle;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if (errno(err) === 'ENOENT') return { missing: true };
    throw new Error(`cannot read the development issuer key ${file}: ${(err as Error).message}`);
  }
  try {
    const key = parseKey(await handle.readFile('utf8'));
    return key ? { key } : { brokenIno: (await handle.stat()).ino };
  } finally {
    await handle.close();
  }
}

async function newKey(): Promise<StoredKey> {
  const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
  const kid = randomUUID();
  return {
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: ALG },
    publicJwk: { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' },
  };
}

/**
 * Writes the whole key under a temporary name in the same directory, fsyncs it,
 * then hard-links it to the final name. `link` fails with EEXIST when the name
 * exists, so the first writer wins and every reader sees either no file or a
 * complete one; a crash leaves only a temporary file. False: another process won.
 */
async function publish(file: string, key: StoredKey): Promise<boolean> {
  const dir = path.dirname(file);
  const tmp = path.join(dir, `${TMP_PREFIX}${randomUUID()}.tmp`);
  const handle = await open(tmp, 'wx', 0o600);
  try {
    try {
      await handle.writeFile(JSON.stringify(key));
      await handle.sync();
    } finally {
      await handle.close();
    }
    await link(tmp, file).catch(async (err: unknown) => {
      if (!['EPERM', 'ENOTSUP', 'EOPNOTSUPP', 'ENOSYS'].includes(errno(err) ?? '')) throw err;
      // No hard links on this file system: rename is still atomic (readers see all or nothing),
      // but two writers within the same instant could both "win"; the later key stays.
      if (await lstat(file).then(() => true, () => false)) throw Object.assign(new Error('exists'), { code: 'EEXIST' });
      await rename(tmp, file);
    });
  } catch (err) {
    if (errno(err) === 'EEXIST') return false;
    throw err;
  } finally {
    await rm(tmp, { force: true });
  }
  // The new name should survive a power loss too (else a later start makes another key).
  // Best effort: some file systems refuse fsync on a directory, and that must not stop a start.
  const d = await open(dir, 'r').catch(() => undefined);
  await d?.sync().catch(() => {});
  await d?.close();
  return true;
}

/** Temporary files from crashed writers are never read; remove the old ones. */
async function removeStaleTemps(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [])) {
    if (!name.startsWith(TMP_PREFIX)) continue;
    const st = await lstat(path.join(dir, name)).catch(() => undefined);
    if (st && Date.now() - st.mtimeMs > STALE_TMP_MS) await rm(path.join(dir, name), { force: true });
  }
}

/** Reads the key file without ever creating it (tools that mint for a server): undefined when it is not there or not whole. */
export async function readExistingKey(file: string): Promise<StoredKey | undefined> {
  const found = await readKey(file);
  return 'key' in found ? found.key : undefined;
}

/**
 * Reads the key file, creating it when missing. Processes starting together
 * agree on one key (the first `publish` wins; the others read it). An
 * unparsable file can only come from a crash of a version that wrote in place:
 * it is moved aside to `key.json.broken-<time>` (only if it is still the same
 * file, so a key another process just published is never moved) and replaced.
 */
export async function loadOrCreateKey(file: string): Promise<StoredKey> {
  const dir = path.dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await removeStaleTemps(dir);
  for (let attempt = 0; attempt < 5; attempt++) {
    const found = await readKey(file);
    if ('key' in found) return found.key;
    if ('brokenIno' in found) {
      const now = await lstat(file).catch(() => undefined);
      if (now?.ino === found.brokenIno) await rename(file, `${file}.broken-${Date.now()}`).catch((err: unknown) => {
        if (errno(err) !== 'ENOENT') throw err;
      });
      continue;
    }
    const key = await newKey();
    if (await publish(file, key)) return key;
    // another process published first: read its key on the next turn
  }
  throw new Error(`cannot read or create the development issuer key ${file}`);
}
