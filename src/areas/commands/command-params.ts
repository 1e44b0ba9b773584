import { z } from 'zod';
import { badRequest } from '../../errors/app-error.js';
import type { CommandName } from '../../connectors/connector.js';

/** The parameters each repository command takes (DESIGN.md section 6). */
const uuid = z.uuid({ message: 'must be an entry UUID' });
const name = z.string().min(1).max(255);

export const COMMAND_PARAMS = {
  copy: z.strictObject({ source: uuid, target: uuid, name: name.optional() }),
  move: z.strictObject({ source: uuid, target: uuid, name: name.optional(), force: z.boolean().default(false) }),
  delete: z.strictObject({ source: uuid, force: z.boolean().default(false) }),
  import: z.strictObject({
    url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(4096),
    target: uuid.optional(),
    name: name.optional(),
    mimeType: z.string().regex(/^[\w.+-]+\/[\w.+-]+$/).optional(),
  }),
  preview: z.strictObject({ source: uuid }),
} satisfies Record<CommandName, z.ZodType>;

export type CommandParams<N extends CommandName> = z.infer<(typeof COMMAND_PARAMS)[N]>;

export const launchSchema = z.strictObject({
  command: z.enum(Object.keys(COMMAND_PARAMS) as [CommandName, ...CommandName[]]),
  parameters: z.record(z.string(), z.unknown()).default({}),
});

export function parseParams<N extends CommandName>(command: N, raw: unknown): CommandParams<N> {
  const res = COMMAND_PARAMS[command].safeParse(raw);
  if (!res.success) {
    throw badRequest('INVALID_PARAMETERS', `invalid parameters for ${command}`, {
      issues: res.error.issues.map((i) => ({ path: ['parameters', ...i.path.map(String)].join('.'), message: i.message })),
    });
  }
  return res.data as CommandParams<N>;
}
