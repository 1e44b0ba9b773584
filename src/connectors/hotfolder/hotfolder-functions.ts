import { opendir, lstat } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import { AppError } from '../../errors/app-error.js';
import type { FunctionsFacet } from '../facets/functions.js';
import type { IntakeClaim } from '../ports.js';
import type { FolderOptions } from './options.js';

/** Most names looked at per folder by one call (a folder holding more says `truncated`). */
const MAX_LIMIT = 10_000;

/** What a file at the top of a watched folder is waiting for. */
export type PendingState = 'unstable' | 'waiting' | 'claimed' | 'stored';

export interface PendingFile {
  name: string;
  state: PendingState;
  size?: number;
  modified?: string;
  /** For a claimed or stored file: when it was claimed. */
  claimed?: string;
}

/**
 * The hot folder's `pending` function: what lies in its folders and is not
 * taken yet. Read from the disk and the claims, so it answers in any process
 * (the intake itself runs in one worker process): `unstable` (changed within
 * `stableMs`: still arriving), `waiting` (stable, to be taken at the next
 * pass), `claimed` / `stored` (being taken: the claim exists, the document is
 * not yet stored / the source not yet moved; also a claim whose file is gone).
 * Names the folder's include/exclude rules leave alone count as `ignored`.
 */
export function hotfolderFunctions(folders: readonly (FolderOptions & { dir: string })[], stableMs: number): FunctionsFacet {
  return {
    list: [{
      fid: 'pending',
      description: 'Files in the watched folders not taken yet: unstable (still arriving), waiting, claimed or stored (being taken)',
      parameters: [
        { name: 'folder', type: 'string', required: false, description: 'One folder, as configured (its `path`); default all', ...(folders[0] ? { example: folders[0].path } : {}) },
        { name: 'limit', type: 'integer', required: false, description: `Most names looked at per folder (1-${MAX_LIMIT}, default 1000)`, example: 100 },
      ],
      requires: { area: 'documents', action: 'read' },
    }],
    async call(_fid, params, ctx) {
      const limit = params.limit === undefined ? 1000 : Number(params.limit);
      if (limit < 1 || limit > MAX_LIMIT) throw new AppError('INVALID_PARAMETERS', `limit must be between 1 and ${MAX_LIMIT}`, { fid: 'pending', issues: [`limit: 1-${MAX_LIMIT}`] });
      const chosen = params.folder === undefined ? folders : folders.filter((f) => f.path === params.folder);
      if (chosen.length === 0) throw new AppError('INVALID_PARAMETERS', `no watched folder "${String(params.folder).slice(0, 80)}" (folders: ${folders.map((f) => f.path).join(', ')})`, { fid: 'pending', issues: ['folder: not a watched folder'] });
      const out = [];
      for (const f of chosen) {
        if (ctx.signal.aborted) throw ctx.signal.reason;
        out.push(await pendingIn(f, stableMs, limit, await ctx.claims.unfinished(f.dir)));
      }
      return { folders: out };
    },
  };
}

async function pendingIn(f: FolderOptions & { dir: string }, stableMs: number, limit: number, claims: IntakeClaim[]) {
  const isIncluded = picomatch(f.include, { dot: false, nocase: false });
  const isExcluded = picomatch(f.exclude, { dot: true });
  const claimed = new Map(claims.map((c) => [c.name, c]));
  const files: PendingFile[] = [];
  let ignored = 0;
  let truncated = false;
  let seen = 0;
  const dir = await opendir(f.dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (dir) {
    try {
      for await (const e of dir) {
        if (seen >= limit) {
          truncated = true;
          break;
        }
        seen += 1;
        if (!e.isFile()) continue; // done/, error/ and any other directory or link are never taken
        if (!isIncluded(e.name) || isExcluded(e.name)) {
          ignored += 1;
          continue;
        }
        const st = await lstat(path.join(f.dir, e.name)).catch(() => undefined);
        if (!st) continue; // taken (moved) meanwhile
        const claim = claimed.get(e.name);
        claimed.delete(e.name);
        files.push({
          name: e.name,
          state: claim ? claim.state as 'claimed' | 'stored' : Date.now() - st.mtimeMs < stableMs ? 'unstable' : 'waiting',
          size: st.size,
          modified: st.mtime.toISOString(),
          ...(claim ? { claimed: claim.claimed.toISOString() } : {}),
        });
      }
    } finally {
      await dir.close().catch(() => {});
    }
  }
  // claims whose file is already moved or gone: still being finished
  for (const c of claimed.values()) files.push({ name: c.name, state: c.state as 'claimed' | 'stored', claimed: c.claimed.toISOString() });
  files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { path: f.path, files, ignored, truncated };
}
