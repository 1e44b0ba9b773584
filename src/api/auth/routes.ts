import Router from '@koa/router';
import type { Services } from '../../runtime/services.js';

/** GET /v1/auth (no token): what a UI needs to log in. */
export function authInfoRoutes(s: Services): Router {
  const router = new Router();
  router.get('/auth', (ctx) => {
    const { clientId, scopes } = s.config.auth;
    ctx.body = {
      url: s.verifier.issuer,
      ...(clientId ? { clientId } : {}),
      scopes,
      ...(s.devIssuer ? { development: true } : {}),
    };
  });
  return router;
}

/** Discovery and JWKS of the built-in development issuer (only when no OIDC_ISSUER is set). */
export function devIssuerRoutes(s: Services): Router | undefined {
  const issuer = s.devIssuer;
  if (!issuer) return undefined;
  const router = new Router({ prefix: '/dev-issuer' });
  router.get('/.well-known/openid-configuration', (ctx) => {
    ctx.body = issuer.discovery();
  });
  router.get('/jwks', (ctx) => {
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.body = issuer.jwks();
  });
  return router;
}
