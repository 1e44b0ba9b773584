import { spawn } from 'node:child_process';
import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PART_OWNER, STALE_PART_MS, isAbandoned, partFileName } from '../../../src/blobs/part-files.js';
import { tempDir } from '../../helpers/fs.js';
import { eventually, startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';

/**
 * Start-up sweep of part files in a DATA_DIR that other processes may share:
 * parts of dead writers on this host go at once, parts of live writers stay,
 * parts of unknown owners (another host, old-style names) go only once stale.
 * Counted in the log and in `part_files_removed_total`.
 */
const host = PART_OWNER.split('-')[0]!;
const uuid = () => '0c0ffee0-0000-4000-8000-' + Math.random().toString(16).slice(2, 14).padEnd(12, '0');
let rt: TestRuntime | undefined;
afterAll(async () => {
  await rt?.close();
});

/** The pid of a process that has exited (not reused this soon in practice). */
const deadPid = () => new Promise<number>((resolve) => {
  const child = spawn(process.execPath, ['-e', '0']);
  child.on('exit', () => resolve(child.pid!));
});

describe('part files', () => {
  it('isAbandoned: own and live writers are spared, dead ones and stale unknown ones are not', async () => {
    const now = Date.now();
    const dead = await deadPid();
    expect(isAbandoned(partFileName(), now)).toBe(false);
    expect(isAbandoned(partFileName(), now - 10 * STALE_PART_MS)).toBe(false); // ours, however old: the writer cleans up
    expect(isAbandoned(`${host}-${dead}-abcdef01.${uuid()}.part`, now)).toBe(true);
    expect(isAbandoned(`.wcr-${host}-${dead}-abcdef01.${uuid()}.part`, now)).toBe(true);
    expect(isAbandoned(`${host}-${process.pid}-abcdef01.${uuid()}.part`, now)).toBe(true); // our pid, an earlier boot
    expect(isAbandoned(`${host}-${process.ppid}-abcdef01.${uuid()}.part`, now)).toBe(false); // a live process
    expect(isAbandoned(`${host}-${process.ppid}-abcdef01.${uuid()}.part`, now - STALE_PART_MS - 1000)).toBe(true);
    expect(isAbandoned(`ffffffff-${dead}-abcdef01.${uuid()}.part`, now)).toBe(false); // another host: pids say nothing
    expect(isAbandoned(`ffffffff-${dead}-abcdef01.${uuid()}.part`, now - STALE_PART_MS - 1000)).toBe(true);
    expect(isAbandoned(`${uuid()}.part`, now)).toBe(false);
    expect(isAbandoned(`${uuid()}.part`, now - STALE_PART_MS - 1000)).toBe(true);
    expect(isAbandoned('report.part', now - 10 * STALE_PART_MS)).toBe(false); // not ours at all
  });

  it('start-up removes abandoned part files of the blob store and the filesystem repository, logs and counts them', async () => {
    const dataDir = await tempDir('wcr-parts-');
    const tmp = path.join(dataDir, 'blobs', 'tmp');
    const nested = path.join(dataDir, 'files', 'a', 'b');
    await mkdir(tmp, { recursive: true });
    await mkdir(nested, { recursive: true });
    const dead = await deadPid();
    const old = new Date(Date.now() - STALE_PART_MS - 60_000);
    const make = async (dir: string, name: string, stale = false) => {
      await writeFile(path.join(dir, name), Buffer.alloc(1000));
      if (stale) await utimes(path.join(dir, name), old, old);
      return name;
    };
    const gone = [
      await make(tmp, `${host}-${dead}-abcdef01.${uuid()}.part`),
      await make(tmp, `${uuid()}.part`, true),
      await make(tmp, `ffffffff-1-abcdef01.${uuid()}.part`, true),
    ];
    const kept = [
      await make(tmp, `${host}-${process.ppid}-abcdef01.${uuid()}.part`), // a live writer
      await make(tmp, `${uuid()}.part`), // unknown owner, fresh
      await make(tmp, 'notes.part', true), // not a part file name
    ];
    const fsGone = [await make(nested, `.wcr-${host}-${dead}-abcdef01.${uuid()}.part`), await make(path.join(dataDir, 'files'), `.wcr-${uuid()}.part`, true)];
    const fsKept = [await make(nested, `.wcr-${host}-${process.ppid}-abcdef01.${uuid()}.part`), await make(nested, 'doc.part')];

    rt = await startTestRuntime({ overrides: { dataDir } });
    expect((await readdir(tmp)).sort()).toEqual(kept.sort());
    await eventually(async () => ((await readdir(nested)).length === fsKept.length ? true : undefined), 20_000);
    expect((await readdir(nested)).sort()).toEqual(fsKept.sort());
    expect(await readdir(path.join(dataDir, 'files'))).not.toContain(fsGone[1]);
    const metrics = await (await fetch(`${rt.url}/metrics`)).text();
    expect(metrics).toMatch(new RegExp(`part_files_removed_total\\{where="blobs"\\} ${gone.length}`));
  });
});
