import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { dirSyncer, syncDir } from '../../src/blobs/dir-sync.js';
import { tempDir } from '../helpers/fs.js';

/** A fake fsync whose calls finish when the test says so. */
function fakeFsync() {
  const calls: { dir: string; finish: (err?: Error) => void }[] = [];
  const fsync = (dir: string) => new Promise<void>((resolve, reject) => {
    calls.push({ dir, finish: (err) => (err ? reject(err) : resolve()) });
  });
  return { calls, fsync };
}

const tick = () => new Promise((r) => setImmediate(r));

describe('syncDir', () => {
  const tmp = tempDir('dir-sync-');

  it('syncs a real directory, and refuses one that does not exist', async () => {
    await expect(syncDir(await tmp)).resolves.toBeUndefined();
    await expect(syncDir(path.join(await tmp, 'missing'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('a call during a running sync waits for the next one, which every call arriving meanwhile shares', async () => {
    const { calls, fsync } = fakeFsync();
    const sync = dirSyncer(fsync);
    const done: string[] = [];
    const first = sync('/d').then(() => done.push('first'));
    await tick();
    expect(calls).toHaveLength(1);
    // these arrive while the first sync runs: it may have missed their entries
    const later = [sync('/d'), sync('/d'), sync('/d')].map((p, i) => p.then(() => done.push(`later${i}`)));
    await tick();
    expect(calls).toHaveLength(1);
    calls[0]!.finish();
    await first;
    await tick();
    expect(done).toEqual(['first']); // the later calls are not satisfied by the sync that started before them
    expect(calls).toHaveLength(2); // one more sync for all three
    calls[1]!.finish();
    await Promise.all(later);
    expect(done).toEqual(['first', 'later0', 'later1', 'later2']);
    expect(calls).toHaveLength(2);
  });

  it('directories are synced independently, and a failed sync rejects only the calls that waited for it', async () => {
    const { calls, fsync } = fakeFsync();
    const sync = dirSyncer(fsync);
    const a = sync('/a');
    const b = sync('/b');
    await tick();
    expect(calls.map((c) => c.dir)).toEqual(['/a', '/b']);
    const a2 = sync('/a');
    calls[0]!.finish(Object.assign(new Error('EIO'), { code: 'EIO' }));
    await expect(a).rejects.toThrow('EIO');
    await tick();
    expect(calls).toHaveLength(3); // the waiting call still gets its own sync
    calls[2]!.finish();
    await expect(a2).resolves.toBeUndefined();
    calls[1]!.finish();
    await expect(b).resolves.toBeUndefined();
  });
});
