import Router from '@koa/router';
import { z } from 'zod';
import { body, principal } from '../../../api/context.js';
import { jsonBody } from '../../../api/middleware/json-body.js';
import { validate } from '../../../api/validate.js';
import { AppError } from '../../../errors/app-error.js';
import { ACTIONS } from '../../../config/schema.js';
import type { Services } from '../../../runtime/services.js';
import { deleteConfigs, mergeConfigs, readConfigs } from './config-store.js';

// eslint-disable-next-line no-control-regex -- control characters are what a key must not hold
const configKey = z.string().min(1).max(200).refine((k) => !/[\u0000-\u001f\u007f]/.test(k), 'a key holds no control characters');
const MAX_KEYS = 1000;

/** The areas of the print API whose rights `/v3/auth/userroles` reports. */
const PRINT_AREAS = ['jobs', 'printers', 'flows', 'statistics', 'configuration'] as const;

/**
 * Configuration keys (`/v3/configs/`: a key/value object; `PUT` merges,
 * `DELETE ?key=K` removes) in the `configuration` area (read for operators,
 * changes for admins), and the caller's roles (`/v3/auth/userroles`).
 */
export function printConfigRoutes(s: Services): Router {
  const router = new Router();
  const json = jsonBody(s.config.server.jsonLimit);

  router.get(['/configs', '/configs/'], async (ctx) => {
    s.policy.require(principal(ctx), 'configuration', 'read');
    ctx.body = await readConfigs(s.db);
  });

  router.put(['/configs', '/configs/'], json, async (ctx) => {
    s.policy.require(principal(ctx), 'configuration', 'write');
    const b = body(ctx);
    if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new AppError('VALIDATION_FAILED', 'the body is a JSON object of keys and their values');
    const entries = Object.entries(b as Record<string, unknown>);
    if (entries.length > MAX_KEYS) throw new AppError('VALIDATION_FAILED', `at most ${MAX_KEYS} keys at once`);
    for (const [k] of entries) validate(configKey, k, 'key');
    await mergeConfigs(s.db, entries);
    ctx.body = await readConfigs(s.db);
  });

  router.delete(['/configs', '/configs/'], async (ctx) => {
    s.policy.require(principal(ctx), 'configuration', 'delete');
    const params = new URLSearchParams(ctx.querystring);
    for (const k of params.keys()) if (k !== 'key') throw new AppError('INVALID_QUERY', `unknown query parameter ${k.slice(0, 40)}; use ?key=K (repeatable)`);
    const keys = params.getAll('key');
    if (keys.length === 0) throw new AppError('INVALID_QUERY', 'name the keys to remove: ?key=K (repeatable)');
    if (keys.length > MAX_KEYS) throw new AppError('INVALID_QUERY', `at most ${MAX_KEYS} keys at once`);
    for (const k of keys) validate(configKey, k, 'key');
    await deleteConfigs(s.db, keys);
    ctx.body = await readConfigs(s.db);
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
