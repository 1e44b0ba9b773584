import type { EntryRow } from '../../connectors/facets/repository.js';

/** A repository entry as stored (one row of `entries`): the repository facet declares it, since every backend is handed one. */
export type { EntryRow };

/** The content of a document being written or read. */
export interface ContentInfo {
  size: number;
  mimeType: string;
  sha256: string | null;
  version: string;
}

/** A task that uses a document, as listed in 409 bodies. */
export interface TaskRef {
  tid: string;
  sid: string;
  href: string;
  status: string;
}

/** A new entry row before it is stored: content, path and previews still empty. */
export function draftEntry(fields: Pick<EntryRow, 'uuid' | 'sid' | 'parent' | 'name' | 'type' | 'metadata' | 'creator' | 'owner'>): EntryRow {
  const now = new Date();
  return {
    ...fields, created: now, modified: now, size: null, mime_type: null, sha256: null, content_version: null,
    path: null, preview_sha256: null, thumb_sha256: null, preview_of: null, preview_error: null,
  };
}
