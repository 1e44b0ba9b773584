import { readdir, readFile, readlink } from 'node:fs/promises';

/** O_ACCMODE bits of /proc/<pid>/fdinfo's `flags` (octal): write-only or read-write. */
const O_ACCMODE = 0o3;

/**
 * Which of `paths` some process has open for writing, where Linux can tell:
 * every process's open descriptors in `/proc/<pid>/fd` whose target is one of
 * the paths, and the access mode in `/proc/<pid>/fdinfo/<fd>`. Processes this
 * one may not inspect (another user's, without privileges) are not seen, and
 * on a system without `/proc` nothing is: the stable-size wait still holds.
 * One pass over /proc serves any number of paths.
 */
export async function openForWriting(paths: ReadonlySet<string>): Promise<Set<string>> {
  const found = new Set<string>();
  if (paths.size === 0) return found;
  let pids: string[];
  try {
    pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d));
  } catch {
    return found;
  }
  await Promise.all(pids.map(async (pid) => {
    let fds: string[];
    try {
      fds = await readdir(`/proc/${pid}/fd`);
    } catch {
      return; // gone, or not ours to look at
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = await readlink(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!paths.has(target) || found.has(target)) continue;
      try {
        const info = await readFile(`/proc/${pid}/fdinfo/${fd}`, 'utf8');
        const flags = /^flags:\s*([0-7]+)/m.exec(info)?.[1];
        if (flags !== undefined && (parseInt(flags, 8) & O_ACCMODE) !== 0) found.add(target);
      } catch {
        // closed meanwhile
      }
    }
  }));
  return found;
}
