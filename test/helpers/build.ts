import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

/** The checkout's root. */
export const ROOT = path.resolve(import.meta.dirname, '../..');

/** The newest modification time of the files under `dir`. */
function newest(dir: string): number {
  let t = 0;
  for (const e of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) t = Math.max(t, statSync(path.join(e.parentPath, e.name)).mtimeMs);
  }
  return t;
}

/** Sleeps synchronously (the build check runs before a test's first process starts, outside any event loop work). */
const sleepSync = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** Whether `dist/` is at least as new as `src/`. */
function fresh(): boolean {
  try {
    return statSync(path.join(ROOT, 'dist/src/entrypoints/server.js')).mtimeMs >= newest(path.join(ROOT, 'src'));
  } catch {
    return false;
  }
}

/**
 * Tests that run the compiled program (`dist/`: the processes of
 * `test/helpers/process.ts`, the server as `scripts/up` starts it, `npm run
 * token`, `wcr`) build it only when `src/` is newer than the build.
 * `scripts/test` builds before any test file runs; when test files started
 * another way find the build stale at once, one of them builds under a lock
 * directory (`mkdir` is atomic) and the others wait for it, so no process
 * starts from a half-written `dist/`. A lock left by a killed run is taken
 * over after 5 minutes.
 */
export function ensureBuilt(): void {
  if (fresh()) return;
  const lock = path.join(ROOT, '.build-lock');
  for (const end = Date.now() + 600_000; ; sleepSync(200)) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const held = statSync(lock, { throwIfNoEntry: false });
      if (held && Date.now() - held.mtimeMs > 300_000) rmSync(lock, { recursive: true, force: true });
      if (Date.now() > end) throw new Error(`${lock} held for 10 minutes: another build hangs (remove the directory if no build runs)`);
    }
  }
  try {
    if (fresh()) return; // built by the holder we waited for
    const res = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
    if (res.status !== 0) throw new Error(`npm run build failed:\n${res.stdout}\n${res.stderr}`);
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
