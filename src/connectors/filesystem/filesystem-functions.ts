import { constants, existsSync } from 'node:fs';
import { lstat, opendir, statfs } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../errors/app-error.js';
import type { FunctionsFacet } from '../facets/functions.js';
import { inspectInside, isValidName, openNoFollow, TEMP_NAME } from './safe-path.js';

const MAX_LIMIT = 10_000;
const PATH_MAX = 4096;
const O_DIRECTORY = constants.O_DIRECTORY ?? 0;
/** Where the kernel shows an open descriptor's directory: listing through it reads what was opened and checked, not a symlink swapped in since. */
const PROC_FD = '/proc/self/fd';

/**
 * The filesystem connector's functions, confined to its root like every
 * path it touches (`safe-path.ts`: no `..`, no absolute path, no symlink on
 * the way): `freeSpace` (the file system's room, from statfs) and `list`
 * (one directory's entries, without reading any file).
 */
export function filesystemFunctions(root: string): FunctionsFacet {
  return {
    list: [
      {
        fid: 'freeSpace',
        description: 'Room on the file system holding the repository: total, free and available bytes',
        parameters: [],
        requires: { area: 'documents', action: 'read' },
      },
      {
        fid: 'list',
        description: 'The entries of one directory of the repository (name, type, size, modified), without reading any file',
        parameters: [
          { name: 'path', type: 'string', required: false, description: 'A directory below the root, `a/b` (default the root)', example: '' },
          { name: 'limit', type: 'integer', required: false, description: `Most entries (1-${MAX_LIMIT}, default 1000; more says truncated)`, example: 100 },
        ],
        requires: { area: 'documents', action: 'read' },
      },
    ],
    async call(fid, params, ctx) {
      if (fid === 'freeSpace') {
        const s = await statfs(root, { bigint: true });
        const bytes = (blocks: bigint) => Number(blocks * s.bsize);
        return { total: bytes(s.blocks), free: bytes(s.bfree), available: bytes(s.bavail) };
      }
      const limit = params.limit === undefined ? 1000 : Number(params.limit);
      if (limit < 1 || limit > MAX_LIMIT) throw new AppError('INVALID_PARAMETERS', `limit must be between 1 and ${MAX_LIMIT}`, { fid, issues: [`limit: 1-${MAX_LIMIT}`] });
      const rel = String(params.path ?? '').replace(/\/+$/, '');
      // what no file system path can be (Linux's PATH_MAX); each segment is checked by safe-path.ts
      if (rel.length > PATH_MAX) throw new AppError('INVALID_PARAMETERS', `path is longer than ${PATH_MAX} characters`, { fid, issues: [`path: at most ${PATH_MAX} characters`] });
      return listDirectory(root, rel, limit, ctx.signal);
    },
  };
}

async function listDirectory(root: string, rel: string, limit: number, signal: AbortSignal) {
  const { abs, stats } = await inspectInside(root, rel);
  if (!stats.isDirectory()) throw new AppError('NOT_A_DIRECTORY', `"${rel}" is not a directory`, { path: rel });
  const handle = await openNoFollow(root, abs, constants.O_RDONLY | O_DIRECTORY);
  try {
    const dirPath = existsSync(PROC_FD) ? path.join(PROC_FD, String(handle.fd)) : abs;
    const entries: { name: string; type: 'file' | 'directory' | 'other'; size?: number; modified?: string }[] = [];
    let truncated = false;
    const dir = await opendir(dirPath);
    try {
      for await (const e of dir) {
        if (signal.aborted) throw signal.reason;
        // part files of writers and names the repository cannot show are not entries
        if (TEMP_NAME.test(e.name) || !isValidName(e.name)) continue;
        if (entries.length >= limit) {
          truncated = true;
          break;
        }
        const st = await lstat(path.join(dirPath, e.name)).catch(() => undefined);
        if (!st) continue;
        const type = st.isFile() ? 'file' : st.isDirectory() ? 'directory' : 'other';
        entries.push({ name: e.name, type, ...(type === 'file' ? { size: st.size } : {}), modified: st.mtime.toISOString() });
      }
    } finally {
      await dir.close().catch(() => {});
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { path: rel, entries, truncated };
  } finally {
    await handle.close();
  }
}
