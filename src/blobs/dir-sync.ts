import { open } from 'node:fs/promises';

/**
 * Makes a directory's entries durable: `fsync` of the directory itself, so a
 * rename or link into it survives a power loss (the file's own bytes are
 * synced by its writer, `flush: true`). Callers that finish at the same time
 * share one `fsync` per directory: a call waits for the sync that starts
 * after it (one already running may have missed its entry), and every call
 * arriving meanwhile joins that same next sync. File systems that refuse
 * `fsync` on a directory (EINVAL, EISDIR, EBADF, ENOTSUP), and directories
 * this process may write but not open (EACCES, EPERM: a drop box), count as
 * synced: there is nothing more it can do.
 */
export const REFUSED = new Set(['EINVAL', 'EISDIR', 'EBADF', 'ENOTSUP', 'EPERM', 'EACCES']);

async function fsyncDir(dir: string): Promise<void> {
  let handle;
  try {
    handle = await open(dir, 'r');
    await handle.sync();
  } catch (err) {
    if (!REFUSED.has((err as NodeJS.ErrnoException).code ?? '')) throw err;
  } finally {
    await handle?.close().catch(() => {});
  }
}

/**
 * A `syncDir` over `fsync` (the directory sync itself; tests pass a fake to
 * watch the coalescing).
 */
export function dirSyncer(fsync: (dir: string) => Promise<void>): (dir: string) => Promise<void> {
  const pending = new Map<string, { running: Promise<void> | undefined; next: Promise<void> | undefined }>();
  const sync = (dir: string): Promise<void> => {
    let s = pending.get(dir);
    if (!s) {
      s = { running: undefined, next: undefined };
      pending.set(dir, s);
    }
    const state = s;
    if (!state.running) {
      state.running = fsync(dir).finally(() => {
        state.running = undefined;
        if (!state.next) pending.delete(dir);
      });
      return state.running;
    }
    // one is running: it may have started before our entry existed; join (or start) the one after it
    state.next ??= state.running.catch(() => {}).then(() => {
      state.next = undefined;
      return sync(dir);
    });
    return state.next;
  };
  return sync;
}

/** `fsync` of `dir`, coalesced per directory (see above). */
export const syncDir = dirSyncer(fsyncDir);
