import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import net from 'node:net';
import { StartError } from '../../errors/start-error.js';

/** Another live process holds the directory. */
export class DirectoryLockedError extends StartError {
  override readonly name = 'DirectoryLockedError';
}

/** Who holds a lock, as its holder says. */
export interface LockHolder {
  pid: number;
  started: string;
}

/**
 * An exclusive lock on a directory for the life of this process, held as a
 * listening socket in Linux's abstract namespace named after the directory's
 * real path. The kernel gives a name to one listener only and frees it when
 * the process ends however it ends (kill -9 included), so there is no stale
 * lock file to judge and no window between "looks stale" and "take it". A
 * process that finds the name taken connects and is told the holder's pid.
 * Elsewhere than Linux there is no abstract namespace: no lock is taken
 * (`undefined`), and the caller says so.
 */
export async function lockDirectory(dir: string, what: string): Promise<{ release(): Promise<void> } | undefined> {
  if (process.platform !== 'linux') return undefined;
  const real = realpathSync(dir);
  const name = `\0workflow-connector-runtime/lock/${createHash('sha256').update(real).digest('hex')}`;
  const me: LockHolder = { pid: process.pid, started: new Date().toISOString() };
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.end(JSON.stringify(me));
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(name, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    const holder = await askHolder(name);
    throw new DirectoryLockedError(`${what} ${real} is in use by ${holder ? `process ${holder.pid} (started ${holder.started})` : 'another process'}; `
      + 'stop that process, or start this one with another DATA_DIR (or a DATABASE_URL)');
  }
  server.unref(); // the lock never keeps the process alive
  return {
    release: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The holder's answer; undefined if it does not give one within a second. */
function askHolder(name: string): Promise<LockHolder | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = net.connect(name);
    socket.setTimeout(1000, () => socket.destroy());
    socket.on('data', (c: Buffer) => (text += c.toString()));
    socket.on('error', () => resolve(undefined));
    socket.on('close', () => {
      try {
        const h = JSON.parse(text) as LockHolder;
        resolve(typeof h.pid === 'number' ? h : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}
