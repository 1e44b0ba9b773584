import { Readable } from 'node:stream';
import Router from '@koa/router';
import type { Context } from 'koa';
import { body, param, principal } from '../../../api/context.js';
import { jsonBody } from '../../../api/middleware/json-body.js';
import { validate } from '../../../api/validate.js';
import { AppError } from '../../../errors/app-error.js';
import { fieldMetadata, parseODataQuery } from '../../../query/odata.js';
import type { Services } from '../../../runtime/services.js';
import { presentJob, presentLog, selectFields } from '../jobs/present.js';
import { PRINTER_FIELDS } from './printer-fields.js';
import { presentPrinter, presentRuntime } from './present.js';
import { messageSchema, printerSchema, redirectSchema, replaceSchema } from './schema.js';
import { testPagePdf } from '../documents/test-page.js';

/** The printer name of the path, decoded by the router (any Unicode, `%2F` for a slash). */
const nameParam = (ctx: Context) => param(ctx, 'printerName');

/** Printers (print API 11.2.0 `/v3/printers/...`, DESIGN.md section 7). */
export function printerRoutes(s: Services): Router {
  const router = new Router();
  const { printers, printJobs: jobs } = s;
  const json = jsonBody(s.config.server.jsonLimit);
  const optionalJson = jsonBody(s.config.server.jsonLimit, { optional: true });

  router.get(['/printers', '/printers/'], async (ctx) => {
    const q = parseODataQuery(ctx.querystring, PRINTER_FIELDS);
    const { rows, total } = await printers.list(principal(ctx), q);
    const results = rows.map((r) => selectFields(presentPrinter(r), q.select));
    ctx.body = q.inlineCount ? { results, totalCount: total } : results;
  });

  router.post(['/printers', '/printers/'], json, async (ctx) => {
    const b = validate(printerSchema, body(ctx));
    const row = await printers.create(principal(ctx), b.name, {
      connection: b.connection, description: b.description ?? null, location: b.location ?? null, enabled: b.enabled, flow: b.flow ?? null,
    });
    ctx.set('Location', `/v3/printers/${encodeURIComponent(row.name)}`);
    ctx.body = presentPrinter(row);
  });

  router.get('/printers/metadata', (ctx) => {
    ctx.body = { resource: 'printers', ...fieldMetadata(PRINTER_FIELDS) };
  });

  router.get('/printers/:printerName', async (ctx) => {
    ctx.body = presentPrinter(await printers.get(principal(ctx), nameParam(ctx)));
  });

  router.put('/printers/:printerName', json, async (ctx) => {
    const name = nameParam(ctx);
    const b = validate(replaceSchema, body(ctx));
    if (b.name !== undefined && b.name !== name) throw new AppError('VALIDATION_FAILED', `the body names printer "${b.name}", the path "${name}"; a printer cannot be renamed`);
    ctx.body = presentPrinter(await printers.replace(principal(ctx), name, {
      connection: b.connection, description: b.description ?? null, location: b.location ?? null, enabled: b.enabled, flow: b.flow ?? null,
    }));
  });

  router.delete('/printers/:printerName', async (ctx) => {
    ctx.body = presentPrinter(await printers.remove(principal(ctx), nameParam(ctx)));
  });

  router.put('/printers/:printerName/checkPhysical', async (ctx) => {
    ctx.body = presentPrinter(await printers.checkPhysical(principal(ctx), nameParam(ctx)));
  });

  router.put('/printers/:printerName/createTestJob', async (ctx) => {
    const p = principal(ctx);
    const printer = await printers.get(p, nameParam(ctx));
    s.policy.require(p, 'printers', 'act');
    const pdf = Readable.from([Buffer.from(await testPagePdf({ printer: printer.name, connection: printer.connection, user: p.user, at: new Date() }))]);
    const job = await jobs.submit(p, {
      printer: printer.name, source: pdf, mimeType: 'application/pdf', name: `Test page for ${printer.name}`.slice(0, 500),
      fileName: 'testpage.pdf', checkin: { type: 'testpage', source: p.user },
    });
    ctx.set('Location', `/v3/jobs/${job.id}`);
    ctx.body = presentJob(job, s.config.print.retention);
  });

  router.get('/printers/:printerName/logs', async (ctx) => {
    ctx.body = (await printers.log(principal(ctx), nameParam(ctx))).map(presentLog);
  });

  router.put('/printers/:printerName/message', json, async (ctx) => {
    const { text } = validate(messageSchema, body(ctx));
    ctx.body = presentPrinter(await printers.setMessage(principal(ctx), nameParam(ctx), text));
  });

  router.delete('/printers/:printerName/message', async (ctx) => {
    ctx.body = presentPrinter(await printers.setMessage(principal(ctx), nameParam(ctx), null));
  });

  for (const op of ['pause', 'resume'] as const) {
    router.put(`/printers/:printerName/${op}`, async (ctx) => {
      ctx.body = presentPrinter(await printers.operate(principal(ctx), nameParam(ctx), op));
    });
  }

  router.put('/printers/:printerName/redirect', json, async (ctx) => {
    const { target } = validate(redirectSchema, body(ctx));
    ctx.body = presentPrinter(await printers.redirect(principal(ctx), nameParam(ctx), target));
  });

  // The spec's runtime operation is a PUT; it reads the runtime (a body, if any, is ignored).
  router.put('/printers/:printerName/runtime', optionalJson, async (ctx) => {
    ctx.body = presentRuntime(await printers.get(principal(ctx), nameParam(ctx)));
  });

  return router;
}
