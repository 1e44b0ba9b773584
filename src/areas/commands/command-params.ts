import { z } from 'zod';
import { AppError } from '../../errors/app-error.js';
import type { CommandName } from '../../connectors/connector.js';
import { MEDIA_TYPE } from '../repository/media-type.js';
import { assertValidName, nameFromUrl } from '../repository/names.js';

/** The parameters each repository command takes (DESIGN.md section 6). */
const uuid = z.uuid({ message: 'must be an entry UUID' });
// a bound against huge strings only; the name rule (names.ts) runs after parsing and answers INVALID_NAME
const name = z.string().min(1).max(1024);

export const COMMAND_PARAMS = {
  copy: z.strictObject({ source: uuid, target: uuid, name: name.optional() }),
  move: z.strictObject({ source: uuid, target: uuid, name: name.optional(), force: z.boolean().default(false) }),
  delete: z.strictObject({ source: uuid, force: z.boolean().default(false) }),
  import: z.strictObject({
    url: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).max(4096),
    target: uuid.optional(),
    name: name.optional(),
    mimeType: z.string().regex(MEDIA_TYPE, 'must be a media type (type/subtype)').transform((t) => t.toLowerCase()).optional(),
  }),
  preview: z.strictObject({ source: uuid }),
} satisfies Record<CommandName, z.ZodType>;

export type CommandParams<N extends CommandName> = z.infer<(typeof COMMAND_PARAMS)[N]>;

export const launchSchema = z.strictObject({
  command: z.enum(Object.keys(COMMAND_PARAMS) as [CommandName, ...CommandName[]]),
  parameters: z.record(z.string(), z.unknown()).default({}),
});

/**
 * The name a copy, move or import gives its result, checked by the one name
 * rule (names.ts): the `name` parameter, else for an import the URL's last
 * path segment (refused with INVALID_NAME when not a valid name, never
 * rewritten); undefined when the source keeps its own name.
 */
export function targetName(command: CommandName, params: { name?: string; url?: string }): string | undefined {
  if (params.name !== undefined) {
    assertValidName(params.name, 'parameters.name');
    return params.name;
  }
  return command === 'import' && params.url !== undefined ? nameFromUrl(new URL(params.url)) : undefined;
}

/** Validates a command's parameters: 400 INVALID_PARAMETERS for their shape, 400 INVALID_NAME for a name. */
export function parseParams<N extends CommandName>(command: N, raw: unknown): CommandParams<N> {
  const res = COMMAND_PARAMS[command].safeParse(raw);
  if (!res.success) {
    throw new AppError('INVALID_PARAMETERS', `invalid parameters for ${command}`, {
      issues: res.error.issues.map((i) => ({ path: ['parameters', ...i.path.map(String)].join('.'), message: i.message })),
    });
  }
  targetName(command, res.data as { name?: string; url?: string });
  return res.data as CommandParams<N>;
}
