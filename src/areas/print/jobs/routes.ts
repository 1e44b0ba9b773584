import Router from '@koa/router';
import { body, param, principal, singleQuery } from '../../../api/context.js';
import { jsonBody } from '../../../api/middleware/json-body.js';
import { requestBody } from '../../../api/middleware/body-timeout.js';
import { validate } from '../../../api/validate.js';
import { AppError } from '../../../errors/app-error.js';
import { fieldMetadata, parseODataQuery } from '../../../query/odata.js';
import type { Services } from '../../../runtime/services.js';
import { JOB_FIELDS } from './job-fields.js';
import type { JobOperation } from './job-states.js';
import { jobListWriter, logText, presentJob, presentLog } from './present.js';
import { moveSchema, submitQuerySchema, tempfilesSchema } from './schema.js';

/** Print jobs (print API 11.2.0 `/v3/jobs/...`, DESIGN.md section 7). */
export function printJobRoutes(s: Services): Router {
  const router = new Router();
  const jobs = s.printJobs;
  const json = jsonBody(s.config.server.jsonLimit);
  const retention = s.config.print.retention;
  const present = (row: Parameters<typeof presentJob>[0]) => presentJob(row, retention);
  const listJson = jobListWriter();

  router.get(['/jobs', '/jobs/'], async (ctx) => {
    const q = parseODataQuery(ctx.querystring, JOB_FIELDS);
    const { page, total } = await jobs.list(principal(ctx), q);
    // the page as JSON text built by PostgreSQL (present.ts), not objects serialised by Koa
    ctx.type = 'application/json';
    ctx.body = listJson(page, q.inlineCount ? total : undefined);
  });

  // Extension (not in the 11.2.0 spec): the document as the raw body, streamed.
  router.post(['/jobs', '/jobs/'], async (ctx) => {
    const qs = validate(submitQuerySchema, singleQuery(ctx), 'query');
    const max = s.config.print.maxDocumentBytes || s.config.server.maxUploadBytes;
    if (max > 0 && (ctx.request.length ?? 0) > max) throw new AppError('PAYLOAD_TOO_LARGE', `the document is larger than the limit of ${max} bytes`);
    const mime = (ctx.get('content-type').split(';')[0] ?? '').trim().toLowerCase() || 'application/octet-stream';
    if (!/^[\w.+-]+\/[\w.+-]+$/.test(mime)) throw new AppError('INVALID_CONTENT_TYPE', `"${mime.slice(0, 80)}" is not a media type`);
    const owner = ctx.get('x-owner') || undefined;
    const job = await jobs.submit(principal(ctx), {
      printer: qs.printer, source: requestBody(ctx), mimeType: mime, name: qs.name, fileName: qs.fileName ?? qs.name ?? null,
      copies: qs.copies, priority: qs.priority, flow: qs.flow === undefined ? undefined : qs.flow || null,
      retentionSec: qs.retention ?? null, checkin: { type: 'api', source: ctx.get('user-agent').slice(0, 200) || null },
    }, owner);
    ctx.status = 201;
    ctx.set('Location', `/v3/jobs/${job.id}`);
    ctx.body = present(job);
  });

  router.get('/jobs/metadata', (ctx) => {
    ctx.body = { resource: 'jobs', ...fieldMetadata(JOB_FIELDS) };
  });

  router.get('/jobs/:id', async (ctx) => {
    ctx.body = present(await jobs.get(principal(ctx), param(ctx, 'id')));
  });

  router.delete('/jobs/:id', async (ctx) => {
    ctx.body = present(await jobs.remove(principal(ctx), param(ctx, 'id')));
  });

  for (const op of ['cancel', 'pause', 'resume', 'repeat'] as const satisfies JobOperation[]) {
    router.put(`/jobs/:id/${op}`, async (ctx) => {
      ctx.body = present(await jobs.operate(principal(ctx), param(ctx, 'id'), op));
    });
  }

  router.put('/jobs/:id/move', json, async (ctx) => {
    const { printer } = validate(moveSchema, body(ctx));
    ctx.body = present(await jobs.operate(principal(ctx), param(ctx, 'id'), 'move', { printer }));
  });

  router.get('/jobs/:id/logs', async (ctx) => {
    ctx.body = (await jobs.log(principal(ctx), param(ctx, 'id'))).map(presentLog);
  });

  router.get('/jobs/:id/logfile', async (ctx) => {
    const rows = await jobs.log(principal(ctx), param(ctx, 'id'));
    ctx.type = 'text/plain; charset=utf-8';
    ctx.body = logText(rows);
  });

  router.get('/jobs/:id/collect', async (ctx) => {
    const { job, zip } = await jobs.collect(principal(ctx), param(ctx, 'id'));
    ctx.type = 'application/zip';
    ctx.set('Content-Disposition', `attachment; filename="job-${job.id}.zip"`);
    ctx.body = zip;
  });

  router.get('/jobs/:id/pageinfo', async (ctx) => {
    ctx.body = await jobs.pageInfo(principal(ctx), param(ctx, 'id'));
  });

  router.put('/jobs/:id/tempfiles', json, async (ctx) => {
    const { keep } = validate(tempfilesSchema, body(ctx));
    ctx.body = present(await jobs.tempfiles(principal(ctx), param(ctx, 'id'), keep));
  });

  return router;
}
