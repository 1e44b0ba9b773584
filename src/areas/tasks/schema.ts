import { z } from 'zod';
import { metadataProblem } from '../repository/metadata-rules.js';

/**
 * Request bodies of the task routes (DESIGN.md section 6, "Tasks"). Fields a
 * client may send back from a GET (tid, href, status, cstats, ...) and the
 * generated `links` and `embedded` are accepted and ignored where the body
 * is a task; anything else unknown is a 400.
 */

// Only values the database can store (metadata-rules.ts), as for repository entries.
export const metadata = z.record(z.string().min(1).max(256), z.unknown()).superRefine((value, ctx) => {
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

// 1-1,024 characters and the shared text rule, checked by the service (TaskService: 400 INVALID_NAME, as for list names)
const name = z.string().trim();
const type = z.string().min(1).max(256);

/** An item reference: a repository path under /v1 or an http(s) URL (checked further by the service). */
export const href = z.string().min(1).max(4096);

const readOnlyTask = {
  tid: z.unknown().optional(),
  sid: z.unknown().optional(),
  href: z.unknown().optional(),
  status: z.unknown().optional(),
  cstats: z.unknown().optional(),
  progress: z.unknown().optional(),
  creator: z.unknown().optional(),
  owner: z.unknown().optional(),
  created: z.unknown().optional(),
  modified: z.unknown().optional(),
  links: z.unknown().optional(),
  embedded: z.unknown().optional(),
};

export const itemSchema = z.strictObject({
  id: z.unknown().optional(),
  index: z.unknown().optional(),
  links: z.unknown().optional(),
  href,
  metadata: metadata.default({}),
});

/** The create body: the task, and optionally its input list with items. */
export const createTaskSchema = z.strictObject({
  ...readOnlyTask,
  name,
  type: type.optional(),
  metadata: metadata.default({}),
  lists: z.strictObject({
    input: z.strictObject({
      metadata: metadata.default({}),
      embedded: z.strictObject({ listItems: z.array(itemSchema).max(10_000).default([]) }).default({ listItems: [] }),
    }).optional(),
  }).optional(),
});

/** PUT: `metadata` replaces the stored metadata wholesale (absent: `{}`); name and type change when given. */
export const replaceTaskSchema = z.strictObject({
  ...readOnlyTask,
  lists: z.unknown().optional(),
  name: name.optional(),
  type: type.nullable().optional(),
  metadata: metadata.default({}),
});

/** PATCH: `metadata` is merged key by key; nothing is removed. */
export const patchTaskSchema = z.strictObject({
  ...readOnlyTask,
  lists: z.unknown().optional(),
  name: name.optional(),
  type: type.nullable().optional(),
  metadata: metadata.optional(),
});

/** A list's metadata body (PUT replaces, PATCH merges); PATCH may also carry item indices for reordering. */
const readOnlyList = {
  links: z.unknown().optional(),
  count: z.unknown().optional(),
};

export const replaceListSchema = z.strictObject({ ...readOnlyList, embedded: z.unknown().optional(), metadata: metadata.default({}) });

export const patchListSchema = z.strictObject({
  ...readOnlyList,
  metadata: metadata.optional(),
  embedded: z.strictObject({
    listItems: z.array(z.looseObject({ id: z.uuid(), index: z.int().min(0) })).max(10_000),
  }).optional(),
});

/** PUT of an item: href and metadata replaced. */
export const replaceItemSchema = itemSchema;

/** PATCH of an item: the href changes when given; metadata is merged. */
export const patchItemSchema = z.strictObject({
  id: z.unknown().optional(),
  index: z.unknown().optional(),
  links: z.unknown().optional(),
  href: href.optional(),
  metadata: metadata.optional(),
});

/** POST of an item: a JSON body `{ href, metadata }` (or `?href=` without a body). */
export const appendItemSchema = itemSchema;

export const TASK_EMBEDS = ['metadata', 'input', 'inputlist', 'output', 'cstats'] as const;
export type TaskEmbed = (typeof TASK_EMBEDS)[number];
export const LIST_EMBEDS = ['items'] as const;
export type ListEmbed = (typeof LIST_EMBEDS)[number];
