import Router from '@koa/router';

export const PRINT_API_VERSION = '11.2.0';

const AREAS = {
  jobs: '/v3/jobs/',
  printers: '/v3/printers/',
  flows: '/v3/flows/',
  configs: '/v3/configs/',
  statistics: '/v3/statistics/metadata',
  userroles: '/v3/auth/userroles',
};

/**
 * The print API's root routes `/` and `/v3/`: what the service is, its
 * version and where its areas are. Open (no token): a client finds out
 * what it talks to before it logs in.
 */
export function printRootRoutes(): Router {
  const router = new Router();
  const about = {
    service: 'workflow connector runtime',
    api: 'Print Job Management API',
    version: PRINT_API_VERSION,
  };
  router.get('/', (ctx) => {
    ctx.body = { ...about, links: { v3: '/v3/', workflow: '/v1/services', docs: '/docs', openapi: '/openapi/print-api.json' } };
  });
  router.get('/v3/', (ctx) => {
    ctx.body = { ...about, links: AREAS };
  });
  return router;
}
