import type { Middleware } from 'koa';
import { unauthorized } from '../../errors/app-error.js';
import type { TokenVerifier } from '../../auth/token-verifier.js';
import type { Principal } from '../../auth/principal.js';

/**
 * Requires a valid bearer token; puts the Principal in `ctx.state.principal`.
 * 401 with `WWW-Authenticate: Bearer` when the token is absent or invalid.
 * `seen` is told of every authenticated caller (the sessions count).
 */
export function authenticate(verifier: TokenVerifier, seen?: (p: Principal) => Promise<void>): Middleware {
  return async (ctx, next) => {
    const header = ctx.get('authorization');
    const m = /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
    if (!m) {
      throw header ? unauthorized('malformed Authorization header; expected "Bearer <token>"') : unauthorized('no bearer token', 'invalid_request');
    }
    const p = await verifier.verify(m[1]!);
    ctx.state.principal = p;
    if (seen) await seen(p);
    return next();
  };
}
