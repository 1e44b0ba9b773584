import Router from '@koa/router';
import { createReadStream, existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { createRequire } from 'node:module';
import { parse as parseYaml } from 'yaml';
import { AppError } from '../../errors/app-error.js';

/**
 * Loads `openapi/<name>.yaml`, found by walking up from this module (it runs
 * from `src/` under tsx and vitest, and from `dist/src/` when built).
 */
export function loadOpenApi(name: 'workflow-api' | 'print-api'): Record<string, unknown> {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'openapi', `${name}.yaml`);
    if (existsSync(file)) return parseYaml(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`openapi/${name}.yaml not found above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
}

const SWAGGER_FILES = new Set(['swagger-ui.css', 'swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js', 'favicon-32x32.png']);

/** The OpenAPI documents as JSON and a browsable docs page (Swagger UI, served locally). */
export function docsRoutes(): Router {
  const router = new Router();
  const workflow = loadOpenApi('workflow-api');
  const print = loadOpenApi('print-api');
  const uiDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  router.get('/openapi/workflow-api.json', (ctx) => {
    ctx.body = workflow;
  });
  router.get('/openapi/print-api.json', (ctx) => {
    ctx.body = print;
  });
  router.get('/docs', (ctx) => {
    ctx.type = 'text/html';
    ctx.set('Content-Security-Policy', "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:");
    ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Workflow connector runtime: API</title>
<link rel="stylesheet" href="/docs/assets/swagger-ui.css"></head>
<body><div id="ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script></body></html>`;
  });
  router.get('/docs/init.js', (ctx) => {
    ctx.type = 'application/javascript';
    // `urls` (the document selector) only works with the standalone layout and its preset
    ctx.body = `window.ui = SwaggerUIBundle({ urls: [{ url: '/openapi/workflow-api.json', name: 'Document Workflow API 0.5' }, { url: '/openapi/print-api.json', name: 'Print Job Management API 11.2.0' }], dom_id: '#ui', persistAuthorization: true, presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset], layout: 'StandaloneLayout' });`;
  });
  router.get('/docs/assets/:file', (ctx) => {
    const file = (ctx.params as { file: string }).file;
    if (!SWAGGER_FILES.has(file)) throw new AppError('NOT_FOUND', `no asset ${file}`);
    ctx.type = path.extname(file);
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = createReadStream(path.join(uiDir, file));
  });
  return router;
}
