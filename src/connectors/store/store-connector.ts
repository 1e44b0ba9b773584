import { z } from 'zod';
import type { Connector, ConnectorType, RepositoryBackend } from '../connector.js';
import type { BlobStore } from '../../blobs/blob-store.js';
import { COMMAND_NAMES } from '../connector.js';

const optionsSchema = z.strictObject({
  /** Repository commands this service runs (default: all); [] turns commands off. */
  commands: z.array(z.enum(COMMAND_NAMES)).default([...COMMAND_NAMES]),
});

/**
 * The built-in repository: records in PostgreSQL, bytes in the content-addressed
 * blob store. Copies share blobs (same hash), so copying a document is a row
 * insert; unreferenced blobs are collected by housekeeping.
 */
export function storeBackend(blobs: BlobStore): RepositoryBackend {
  return {
    contentByHash: true,
    create: async () => ({}),
    rename: async () => ({}),
    move: async () => ({}),
    copy: async () => ({}),
    remove: async () => {},
    writeContent: (_entry, source, maxBytes) => blobs.put(source, maxBytes),
    writeFile: (_entry, fd, maxBytes) => blobs.putFile(fd, maxBytes),
    openContent: async (entry, range) => (entry.sha256 ? blobs.open(entry.sha256, range) : undefined),
    contentPath: async (entry) => (entry.sha256 ? blobs.pathOf(entry.sha256) : undefined),
    deleteContent: async () => {},
  };
}

export const storeConnectorType: ConnectorType = {
  type: 'store',
  description: 'Built-in document repository (database records, content-addressed blobs)',
  examples: [{}, { commands: [] }],
  create(ctx): Connector {
    const options = optionsSchema.parse(ctx.config.options);
    return {
      sid: ctx.sid,
      type: 'store',
      repository: { ...storeBackend(ctx.blobs), commands: options.commands, contentDelete: true, contentWrite: true },
    };
  },
};
