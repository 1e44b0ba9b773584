import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
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

/**
 * Tests that run the compiled program (`dist/`: the server as `scripts/up`
 * starts it, `npm run token`, `wcr`) build it only when `src/` is newer than
 * the build. `scripts/test` builds before the test files run, so files
 * running in parallel never rebuild `dist/` under each other's processes.
 */
export function ensureBuilt(): void {
  const built = path.join(ROOT, 'dist/src/entrypoints/server.js');
  let fresh = false;
  try {
    fresh = statSync(built).mtimeMs >= newest(path.join(ROOT, 'src'));
  } catch {
    fresh = false;
  }
  if (fresh) return;
  const res = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, encoding: 'utf8', timeout: 300_000 });
  if (res.status !== 0) throw new Error(`npm run build failed:\n${res.stdout}\n${res.stderr}`);
}
