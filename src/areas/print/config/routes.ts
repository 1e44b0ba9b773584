import Router from '@koa/router';
import { z } from 'zod';
import { body, principal } from '../../../api/context.js';
import { jsonBody } from '../../../api/middleware/json-body.js';
import { validate } from '../../../api/validate.js';
import { AppError } from '../../../errors/app-error.js';
import { textProblem } from '../../../errors/input-errors.js';
import { ACTIONS } from '../../../config/schema.js';
import type { Services } from '../../../runtime/services.js';

// the shared text rule of names (C0, DEL and C1 controls, unpaired surrogates): a C1 key such as U+0085 was stored
const configKey = z.string().min(1).max(200).superRefine((k, ctx) => {
  const problem = textProblem(k);
  if (problem) ctx.addIssue({ code: 'custom', message: `a key ${problem}` });
});
const MAX_KEYS = 1000;

/** The areas of the print API whose rights `/v3/auth/userroles` reports. */
const PRINT_AREAS = ['jobs', 'printers', 'flows', 'statistics', 'configuration'] as const;

/** `PUT /v3/configs/`: the body's keys and values (400 unless a JSON object of valid keys). */
function entriesOf(b: unknown): [string, unknown][] {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new AppError('VALIDATION_FAILED', 'the body is a JSON object of keys and their values');
  const entries = Object.entries(b as Record<string, unknown>);
  if (entries.length > MAX_KEYS) throw new AppError('VALIDATION_FAILED', `at most ${MAX_KEYS} keys at once`);
  for (const [k] of entries) validate(configKey, k, 'key');
  return entries;
}

/** `DELETE /v3/configs/?key=K…`: the keys to remove (400 for any other parameter, none or too many). */
function keysOf(querystring: string): string[] {
  const params = new URLSearchParams(querystring);
  for (const k of params.keys()) if (k !== 'key') throw new AppError('INVALID_QUERY', `unknown query parameter ${k.slice(0, 40)}; use ?key=K (repeatable)`);
  const keys = params.getAll('key');
  if (keys.length === 0) throw new AppError('INVALID_QUERY', 'name the keys to remove: ?key=K (repeatable)');
  if (keys.length > MAX_KEYS) throw new AppError('INVALID_QUERY', `at most ${MAX_KEYS} keys at once`);
  for (const k of keys) validate(configKey, k, 'key');
  return keys;
}

/**
 * Configuration keys (`/v3/configs/`: a key/value object; `PUT` merges,
 * `DELETE ?key=K` removes) in the `configuration` area (read for operators,
 * changes for admins), and the caller's roles (`/v3/auth/userroles`).
 */
export function printConfigRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);

  router.get(['/configs', '/configs/'], async (ctx) => {
    ctx.body = await s.printConfig.read(principal(ctx));
  });

  router.put(['/configs', '/configs/'], json, async (ctx) => {
    ctx.body = await s.printConfig.merge(principal(ctx), () => entriesOf(body(ctx)));
  });

  router.delete(['/configs', '/configs/'], async (ctx) => {
    ctx.body = await s.printConfig.remove(principal(ctx), () => keysOf(ctx.querystring));
  });

  router.get('/auth/userroles', (ctx) => {
    const p = principal(ctx);
    const permissions = Object.create(null) as Record<string, { scope: string; actions: string[] }>;
    for (const area of PRINT_AREAS) {
      const actions = ACTIONS.filter((a) => s.permissions.scope(p, area, a) !== undefined);
      if (actions.length === 0) continue;
      const all = actions.some((a) => s.permissions.scope(p, area, a) === 'all');
      permissions[area] = { scope: all ? 'all' : 'own', actions: [...actions] };
    }
    ctx.body = { user: p.user, roles: p.roles, permissions };
  });

  return router;
}
