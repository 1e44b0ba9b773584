import { z } from 'zod';
import { metadataProblem, unstorableText } from '../repository/metadata-rules.js';

/**
 * Request bodies and query values of the lists routes. Generated members a
 * client may send back from a GET (`lid`, `links`, `embedded`, `created`,
 * ...) are accepted and ignored; anything else unknown is a 400.
 */

// only values the database can store (NUL, lone surrogates, depth, size)
const metadata = z.record(z.string().min(1).max(256), z.unknown()).superRefine((value, ctx) => {
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

const storableText = (max: number) => z.string().max(max).superRefine((value, ctx) => {
  const why = unstorableText(value);
  if (why) ctx.addIssue({ code: 'custom', message: `the text ${why}` });
});

export const HREF_MAX = 4096;
export const hrefSchema = storableText(HREF_MAX).pipe(z.string().min(1, 'href must not be empty'));

const listReadOnly = {
  lid: z.unknown().optional(),
  creator: z.unknown().optional(),
  owner: z.unknown().optional(),
  created: z.unknown().optional(),
  modified: z.unknown().optional(),
  count: z.unknown().optional(),
  links: z.unknown().optional(),
  embedded: z.unknown().optional(),
};

const itemReadOnly = {
  id: z.unknown().optional(),
  index: z.unknown().optional(),
  created: z.unknown().optional(),
  modified: z.unknown().optional(),
  links: z.unknown().optional(),
  embedded: z.unknown().optional(),
};

/** PUT /lists/{lid}: the list's name and metadata, replaced (absent: none). */
export const replaceListSchema = z.strictObject({
  ...listReadOnly,
  // the list store checks names on every way in (list-store.ts `checkName`: 400 INVALID_NAME)
  name: z.string().nullable().optional(),
  metadata: metadata.default({}),
});

/** PATCH /lists/{lid}: metadata merged in; the name set when given. */
export const patchListSchema = z.strictObject({
  ...listReadOnly,
  // the list store checks names on every way in (list-store.ts `checkName`: 400 INVALID_NAME)
  name: z.string().nullable().optional(),
  metadata: metadata.optional(),
});

/** POST /lists/{lid}/items and PUT /lists/{lid}/items/{id}. */
export const itemSchema = z.strictObject({
  ...itemReadOnly,
  href: hrefSchema,
  metadata: metadata.default({}),
});

/** PUT of an item: the href may be left out (kept). */
export const replaceItemSchema = z.strictObject({
  ...itemReadOnly,
  href: hrefSchema.optional(),
  metadata: metadata.default({}),
});

/** PATCH of an item: metadata merged in, the href set when given. */
export const patchItemSchema = z.strictObject({
  ...itemReadOnly,
  href: hrefSchema.optional(),
  metadata: metadata.optional(),
});

export const LIST_EMBEDS = ['items', 'permissions', 'metadata'] as const;
export type ListEmbed = (typeof LIST_EMBEDS)[number];
