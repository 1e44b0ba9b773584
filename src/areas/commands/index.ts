import type { Area } from '../area.js';
import { CommandRunner } from './command-runner.js';
import { deleteExpired, pendingCommands, transition } from './command-store.js';
import { commandRoutes } from './routes.js';

/** Asynchronous repository commands: launch, run in a worker, status delivered once. */
export const commandsArea: Area = {
  name: 'commands',
  v1: commandRoutes,
  jobs(s) {
    const runner = new CommandRunner({
      db: s.db, repo: s.repository, blobs: s.blobs, log: s.log.child({ component: 'commands' }),
      expirySec: s.config.commands.expirySec,
      import: { timeoutMs: s.config.commands.importTimeoutMs, allowPrivate: s.config.commands.importAllowPrivate, maxBytes: s.config.server.maxUploadBytes },
      previews: s.config.previews,
    });
    return { 'command.run': async ({ cid }) => runner.run(cid) };
  },
  async pending(s, limit) {
    return (await pendingCommands(s.db, limit)).map((data) => ({ name: 'command.run' as const, data }));
  },
  async abandon(s, job, reason) {
    if (job.name !== 'command.run') return;
    const error = { code: 'JOB_ABANDONED', message: `the command could not be run: ${reason}`.slice(0, 500) };
    await transition(s.db, job.data.cid, 'failure', { error, expirySec: s.config.commands.expirySec });
  },
  async housekeeping(s) {
    return { expiredCommands: await deleteExpired(s.db) };
  },
};
