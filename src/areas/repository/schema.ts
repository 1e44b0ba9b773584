import { z } from 'zod';

/**
 * Request bodies of the repository routes. Read-only fields a client may send
 * back from a GET (uuid, creator, created, ...) and the generated `links` and
 * `embedded` are accepted and ignored; anything else unknown is a 400.
 */
const readOnly = {
  uuid: z.unknown().optional(),
  creator: z.unknown().optional(),
  created: z.unknown().optional(),
  modified: z.unknown().optional(),
  size: z.unknown().optional(),
  mimeType: z.unknown().optional(),
  sha256: z.unknown().optional(),
  links: z.unknown().optional(),
  embedded: z.unknown().optional(),
};

const metadata = z.record(z.string().min(1).max(256), z.unknown());
// a bound against huge strings only: the name rule itself is names.ts (400 INVALID_NAME)
const name = z.string().min(1).max(1024);

export const createEntrySchema = z.strictObject({
  ...readOnly,
  name,
  type: z.enum(['document', 'collection']).default('document'),
  metadata: metadata.default({}),
  owner: z.unknown().optional(),
});

export const replaceEntrySchema = z.strictObject({
  ...readOnly,
  name,
  type: z.enum(['document', 'collection']).optional(),
  metadata: metadata.default({}),
  owner: z.string().min(1).max(256).nullable().optional(),
});

export const patchEntrySchema = z.strictObject({
  ...readOnly,
  name: name.optional(),
  type: z.enum(['document', 'collection']).optional(),
  metadata: metadata.optional(),
  owner: z.string().min(1).max(256).nullable().optional(),
});

export const inactivesSchema = z.union([
  z.array(z.uuid()).max(10_000),
  z.strictObject({ documents: z.array(z.uuid()).max(10_000) }),
]);

export const EMBED_ENTRY = ['permissions', 'icon', 'thumb'] as const;
export type EntryEmbed = (typeof EMBED_ENTRY)[number];
