import { Readable } from 'node:stream';
import type { BlobStore } from '../blobs/blob-store.js';
import type { RepositoryBackend } from '../connectors/connector.js';
import type { EntryRow } from '../areas/repository/entry.js';
import { setPreview } from '../areas/repository/entry-store.js';
import type { Sql } from '../storage/driver/database.js';
import { canRenderPreview, renderPreview, UnsupportedPreviewError } from './render-preview.js';

export interface PreviewSizes {
  previewSize: number;
  thumbSize: number;
}

/**
 * Renders the preview and thumbnail of a document's current content into the
 * blob store and records them on the entry, unless the content changed in the
 * meantime. Unsupported types are recorded too, so they are not retried.
 */
export async function makePreview(
  deps: { db: Sql; blobs: BlobStore; sizes: PreviewSizes },
  backend: RepositoryBackend,
  entry: EntryRow,
  signal?: AbortSignal,
): Promise<'made' | 'unsupported' | 'stale'> {
  const version = entry.content_version;
  if (entry.type !== 'document' || !version) return 'stale';
  const mime = entry.mime_type ?? 'application/octet-stream';
  if (!canRenderPreview(mime)) {
    await setPreview(deps.db, entry.sid, entry.uuid, version, { preview: null, thumb: null, error: `no preview for ${mime}` });
    return 'unsupported';
  }
  const file = await backend.contentPath(entry);
  if (!file) return 'stale';
  try {
    const out = await renderPreview(file, mime, deps.sizes, signal);
    // stopped meanwhile (the worker is shutting down): nothing is written; the job runs again
    signal?.throwIfAborted();
    const preview = await deps.blobs.put(Readable.from([out.preview]));
    const thumb = await deps.blobs.put(Readable.from([out.thumb]));
    const ok = await setPreview(deps.db, entry.sid, entry.uuid, version, { preview: preview.sha256, thumb: thumb.sha256, error: null });
    return ok ? 'made' : 'stale';
  } catch (err) {
    if (!(err instanceof UnsupportedPreviewError)) throw err;
    await setPreview(deps.db, entry.sid, entry.uuid, version, { preview: null, thumb: null, error: err.message });
    return 'unsupported';
  }
}
