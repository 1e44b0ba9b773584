import { z } from 'zod';
import { metadataProblem, unstorableText } from './metadata-rules.js';

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

// Only values the database can store (metadata-rules.ts): refused here, before any disk change.
const metadata = z.record(z.string().min(1).max(256), z.unknown()).superRefine((value, ctx) => {
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});
// a bound against huge strings only: the name rule itself is names.ts (400 INVALID_NAME)
const name = z.string().min(1).max(1024);
const owner = z.string().min(1).max(256).superRefine((value, ctx) => {
  const why = unstorableText(value);
  if (why) ctx.addIssue({ code: 'custom', message: `owner ${why}` });
});

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
  owner: owner.nullable().optional(),
});

export const patchEntrySchema = z.strictObject({
  ...readOnly,
  name: name.optional(),
  type: z.enum(['document', 'collection']).optional(),
  metadata: metadata.optional(),
  owner: owner.nullable().optional(),
});

export const inactivesSchema = z.union([
  z.array(z.uuid()).max(10_000),
  z.strictObject({ documents: z.array(z.uuid()).max(10_000) }),
]);

export const EMBED_ENTRY = ['permissions', 'icon', 'thumb'] as const;
export type EntryEmbed = (typeof EMBED_ENTRY)[number];
