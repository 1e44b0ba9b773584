import path from 'node:path';
import type { Connector, ConnectorType, IntakeFacet } from '../connector.js';
import type { IntakePorts } from '../ports.js';
import { FolderWatch } from './folder-watch.js';
import { optionsSchema, type HotFolderOptions } from './options.js';
import { hotfolderFunctions } from './hotfolder-functions.js';

/**
 * The hot folder: files dropped into watched directories become documents of
 * a repository service (and, with a task template, tasks that may start at
 * once); the source then moves to done/ or is deleted, a refused file to
 * error/ with its reason beside it. Every file is taken exactly once: claimed
 * in PostgreSQL before anything is stored, finished from the claim after a
 * crash. Runs in one worker process at a time (the service's lease).
 * docs/design/hot-folder.md has the whole behaviour.
 */
export const hotfolderConnectorType: ConnectorType = {
  type: 'hotfolder',
  description: 'Hot folder intake: files dropped into directories become documents (and tasks) exactly once',
  examples: [{ folders: [{ path: 'hotfolder-example', store: { service: 'store' } }], stableMs: 100 }],
  create(ctx): Connector {
    const o = optionsSchema.parse(ctx.config.options);
    const folders = o.folders.map((f) => ({ ...f, dir: path.resolve(ctx.dataDir, f.path) }));
    const uses = o.folders.flatMap((f, i) => [
      { sid: f.store.service, facet: 'repository' as const, option: `folders.${i}.store.service` },
      ...(f.task ? [{ sid: f.task.service, facet: 'tasks' as const, option: `folders.${i}.task.service` }] : []),
    ]);
    return {
      sid: ctx.sid,
      type: 'hotfolder',
      intake: hotFolderIntake(ctx.sid, folders, o),
      functions: hotfolderFunctions(folders, o.stableMs),
      singleInstance: { leaseTtlMs: o.leaseTtlMs },
      uses,
    };
  },
};

function hotFolderIntake(sid: string, folders: (HotFolderOptions['folders'][number] & { dir: string })[], o: HotFolderOptions): IntakeFacet {
  let watches: FolderWatch[] = [];
  return {
    description: `hot folder ${folders.map((f) => f.dir).join(', ')}`,
    async start(ports: IntakePorts, signal: AbortSignal) {
      watches = folders.map((f) => new FolderWatch({ sid, folder: f, dir: f.dir, ports, creator: `hotfolder:${sid}` }, o));
      try {
        for (const w of watches) await w.start(signal);
      } catch (err) {
        await Promise.all(watches.map((w) => w.stop()));
        throw err;
      }
    },
    async stop() {
      await Promise.all(watches.map((w) => w.stop()));
      watches = [];
    },
  };
}
