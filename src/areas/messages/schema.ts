import { z } from 'zod';
import { metadataProblem, unstorableText } from '../repository/metadata-rules.js';
import { MESSAGE_TYPES } from './store/message-store.js';

/**
 * Request bodies of the messages routes. Generated members a client may send
 * back from a GET (`links`, `creator`, `modified`, `user` on a patch) are
 * accepted and ignored; anything else unknown is a 400.
 */

const metadata = z.record(z.string().min(1).max(256), z.unknown()).superRefine((value, ctx) => {
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});

const storableText = (min: number, max: number) => z.string().min(min).max(max).superRefine((value, ctx) => {
  const why = unstorableText(value);
  if (why) ctx.addIssue({ code: 'custom', message: `the text ${why}` });
});

/** An ISO 8601 date-time with its offset (`Z` or `+02:00`). */
const dateTime = z.iso.datetime({ offset: true });

export const TEXT_MAX = 2000;

const fields = {
  type: z.enum(MESSAGE_TYPES),
  text: storableText(1, TEXT_MAX),
  source: storableText(1, 256).nullable(),
  href: storableText(1, 4096).nullable(),
  expires: dateTime.nullable(),
};

const readOnly = {
  links: z.unknown().optional(),
  creator: z.unknown().optional(),
  modified: z.unknown().optional(),
};

/** POST /messages: `text` is required; `type` defaults to info; `uuid` and `date` are the server's when absent. */
export const createMessageSchema = z.strictObject({
  ...readOnly,
  uuid: z.uuid().optional(),
  date: dateTime.optional(),
  type: fields.type.default('info'),
  text: fields.text,
  source: fields.source.optional(),
  href: fields.href.optional(),
  expires: fields.expires.optional(),
  metadata: metadata.default({}),
  /** The recipient; absent: the caller (another user needs `impersonate` on messages). */
  user: storableText(1, 256).optional(),
});

/** PATCH /messages/{uuid}: given fields change (metadata merged); `uuid` and `date` may only be sent back unchanged. */
export const patchMessageSchema = z.strictObject({
  ...readOnly,
  user: z.unknown().optional(),
  uuid: z.string().max(64).optional(),
  date: dateTime.optional(),
  type: fields.type.optional(),
  text: fields.text.optional(),
  source: fields.source.optional(),
  href: fields.href.optional(),
  expires: fields.expires.optional(),
  metadata: metadata.optional(),
});
