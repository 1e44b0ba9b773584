import type { Services } from '../runtime/services.js';
import type { JobHandlers } from '../queue/jobs.js';
import { CommandRunner } from '../domain/commands/command-runner.js';
import { deleteExpired } from '../domain/commands/command-store.js';
import { getEntry, referencedBlobs, setPreview } from '../domain/repository/entry-store.js';
import { makePreview } from '../previews/preview-maker.js';

/** The job handlers a worker process runs; each is small and calls a domain operation. */
export function jobHandlers(s: Services): JobHandlers {
  const runner = new CommandRunner({
    db: s.db, repo: s.repository, blobs: s.blobs, log: s.log.child({ component: 'commands' }),
    expirySec: s.config.commands.expirySec,
    import: { timeoutMs: s.config.commands.importTimeoutMs, allowPrivate: s.config.commands.importAllowPrivate, maxBytes: s.config.server.maxUploadBytes },
    previews: s.config.previews,
  });
  return {
    'command.run': async ({ cid }) => runner.run(cid),
    'preview.render': async ({ sid, uuid, version }, job) => {
      const entry = await getEntry(s.db, sid, uuid);
      if (!entry || entry.content_version !== version) return; // content changed or entry gone: a newer job exists
      const { backend } = s.repository.backend(sid);
      try {
        await makePreview({ db: s.db, blobs: s.blobs, sizes: s.config.previews }, backend, entry);
      } catch (err) {
        if (!job.finalAttempt) throw err; // retried with backoff
        // out of attempts (corrupt or encrypted file, timeouts): say so instead of "not ready" forever
        await setPreview(s.db, sid, uuid, version, { preview: null, thumb: null, error: (err as Error).message.slice(0, 500) });
        s.log.warn({ err, sid, uuid }, 'preview failed for good');
      }
    },
    'housekeeping.run': async () => {
      const expired = await deleteExpired(s.db);
      const blobs = await s.blobs.collectGarbage((hashes) => referencedBlobs(s.db, hashes));
      if (expired + blobs > 0) s.log.info({ expiredCommands: expired, removedBlobs: blobs }, 'housekeeping');
    },
  };
}
