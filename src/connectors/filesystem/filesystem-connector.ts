import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { CommandName, Connector, ConnectorType } from '../connector.js';
import { filesystemBackend } from './filesystem-backend.js';
import { sweepFilesystemParts } from './part-sweep.js';
import { filesystemFunctions } from './filesystem-functions.js';

export { filesystemBackend } from './filesystem-backend.js';

// strictObject: an unknown option (say, a hoped-for `followSymlinks`) is a configuration error,
// not silently ignored. Symlinks are never followed; there is deliberately no switch for it.
const optionsSchema = z.strictObject({
  /** Directory of the repository; relative paths resolve against the data directory. */
  root: z.string().min(1),
});

const COMMANDS: readonly CommandName[] = ['copy', 'move', 'delete', 'import', 'preview'];

/**
 * A repository over a directory tree: entry rows mirror the files below `root`
 * (their `path` column holds the path relative to it) and content is the file
 * itself. No path ever leaves the root: `..`, absolute names and symlinks are
 * refused (see `safe-path.ts`). A file always has content, so DELETE of content
 * is not offered.
 */
export const filesystemConnectorType: ConnectorType = {
  type: 'filesystem',
  description: 'Repository over a directory tree (files are the documents, directories the collections)',
  examples: [{ root: 'files' }],
  async create(ctx): Promise<Connector> {
    const options = optionsSchema.parse(ctx.config.options);
    const configured = path.resolve(ctx.dataDir, options.root);
    await mkdir(configured, { recursive: true });
    // Every later check compares against the real root, so a symlinked root is resolved once, here.
    const root = await realpath(configured);
    ctx.log.debug({ root }, 'filesystem repository root');
    // Part files of killed writers: swept in the background (a large tree must not hold up start-up).
    sweepFilesystemParts(root).then(
      ({ removed, bytes }) => {
        if (removed > 0) ctx.log.info({ sid: ctx.sid, removed, bytes }, 'removed part files left by stopped processes');
      },
      (err: unknown) => ctx.log.warn({ err, sid: ctx.sid }, 'sweeping part files failed'),
    );
    return {
      sid: ctx.sid,
      type: 'filesystem',
      repository: { ...filesystemBackend(root), commands: COMMANDS, contentDelete: false, contentWrite: true },
      functions: filesystemFunctions(root),
    };
  },
};
