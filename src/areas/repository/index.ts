import type { Area } from '../area.js';
import { makePreview } from '../../previews/preview-maker.js';
import { getEntry, pendingPreviews, referencedBlobs, setPreview } from './entry-store.js';
import { repoRoutes } from './routes.js';

/** Document repositories: entries, content, previews. */
export const repositoryArea: Area = {
  name: 'repository',
  v1: repoRoutes,
  jobs: (s) => ({
    'preview.render': async ({ sid, uuid, version }, job) => {
      const entry = await getEntry(s.db, sid, uuid);
      if (!entry || entry.content_version !== version) return; // content changed or entry gone: a newer job exists
      const { backend } = s.repository.backend(sid);
      try {
        await makePreview({ db: s.db, blobs: s.blobs, sizes: s.config.previews }, backend, entry, job.signal);
      } catch (err) {
        // retried with backoff; stopped (the worker is shutting down) is never a failure of the file
        if (!job.finalAttempt || job.signal.aborted) throw err;
        // out of attempts (corrupt or encrypted file, timeouts): say so instead of "not ready" forever
        await setPreview(s.db, sid, uuid, version, { preview: null, thumb: null, error: (err as Error).message.slice(0, 500) });
        s.log.warn({ err, sid, uuid }, 'preview failed for good');
      }
    },
  }),
  async pending(s, limit) {
    return (await pendingPreviews(s.db, limit)).map((data) => ({ name: 'preview.render' as const, data }));
  },
  async abandon(s, job, reason) {
    if (job.name !== 'preview.render') return;
    const { sid, uuid, version } = job.data;
    // recorded like a render that failed for good: the preview answers with the reason, not "not ready" forever
    await setPreview(s.db, sid, uuid, version, { preview: null, thumb: null, error: `no preview could be made: ${reason}`.slice(0, 500) });
  },
  async housekeeping(s) {
    const parts = await s.blobs.sweepParts();
    if (parts.removed > 0) s.metrics.partFilesRemoved.inc({ where: 'blobs' }, parts.removed);
    return {
      removedBlobs: await s.blobs.collectGarbage((hashes) => referencedBlobs(s.db, hashes)),
      removedPartFiles: parts.removed,
    };
  },
};
