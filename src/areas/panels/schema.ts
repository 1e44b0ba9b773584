import { z } from 'zod';
import { metadataProblem } from '../repository/metadata-rules.js';

/**
 * The body of `POST /panels` and `PUT /panels/{pid}`: a ConfigItem, a JSON
 * object whose keys are the panel's configuration. The server reads `name`
 * (unique per user, generated when absent), `taskId` (a task the caller may
 * see), `serviceId` (that task's service, when given) and `createpanel` (`1`
 * or `"1"`: a `panel.create` event); every other key is kept as sent. The
 * fields the server writes itself (`pid`, `creator`, `owner`, `created`,
 * `modified`, `readonly`, `links`) may be sent back from a GET and are
 * ignored.
 */
export const GENERATED_FIELDS = ['pid', 'creator', 'owner', 'created', 'modified', 'readonly', 'links'] as const;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const panelBodySchema = z.looseObject({
  // the name rule (length, text) is checked by the service: 400 INVALID_NAME
  name: z.string().optional(),
  taskId: z.string().regex(UUID, 'taskId must be a task id (a UUID)').optional(),
  serviceId: z.string().min(1).max(63).optional(),
  createpanel: z.union([z.number(), z.string().max(64), z.boolean()]).optional(),
}).superRefine((value, ctx) => {
  // only what the database can store: no lone surrogates, bounded depth and size (as metadata)
  const problem = metadataProblem(value);
  if (problem) ctx.addIssue({ code: 'custom', path: problem.path, message: problem.message });
});
export type PanelBody = z.infer<typeof panelBodySchema>;

/** `createpanel` asks for the `panel.create` event: the number 1 or the string "1". */
export const wantsEvent = (body: PanelBody): boolean => body.createpanel === 1 || body.createpanel === '1';
