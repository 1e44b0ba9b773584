import Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { principal, singleQuery } from '../../../api/context.js';
import { validate } from '../../../api/validate.js';
import { AppError } from '../../../errors/app-error.js';
import { parseDate } from '../../../query/values.js';
import type { Services } from '../../../runtime/services.js';
import { printerName } from '../printers/schema.js';
import type { Period } from './statistics-service.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Default periods when no parameter is given: the last 24 hours by hour, the last 30 days by day. */
const DEFAULT_SPAN = { hour: DAY, day: 30 * DAY } as const;
const MAX_BUCKETS = 2000;

const date = z.string().refine((v) => parseDate(v) !== undefined, 'an ISO 8601 date or date-time').transform((v) => new Date(v));
const periodSchema = z.strictObject({
  from: date.optional(),
  to: date.optional(),
  printer: printerName.optional(),
  interval: z.enum(['hour', 'day']).optional(),
});

/** The period of a statistics query: `to` defaults to now, `from` to one default span before it. */
function period(ctx: Context, allowInterval: boolean): Period {
  const q = validate(periodSchema, singleQuery(ctx), 'query');
  if (!allowInterval && q.interval) throw new AppError('INVALID_QUERY', 'interval belongs to job-series');
  const interval = q.interval ?? 'hour';
  const to = q.to ?? new Date();
  const from = q.from ?? new Date(to.getTime() - DEFAULT_SPAN[interval]);
  if (from.getTime() >= to.getTime()) throw new AppError('INVALID_QUERY', 'from must be before to');
  if (allowInterval && (to.getTime() - from.getTime()) / (interval === 'hour' ? HOUR : DAY) > MAX_BUCKETS) {
    throw new AppError('INVALID_QUERY', `at most ${MAX_BUCKETS} ${interval}s in one series`);
  }
  return { from: from.toISOString(), to: to.toISOString(), printer: q.printer, interval };
}

/** Statistics (`/v3/statistics/...`), read right on the `statistics` area; counts over all jobs. */
export function statisticsRoutes(s: Services): Router {
  const router = new Router();

  router.get('/statistics/job-count', async (ctx) => {
    const { scope: p, total, byStatus } = await s.printStatistics.jobCount(principal(ctx), () => period(ctx, false));
    ctx.body = { from: p.from, to: p.to, printer: p.printer ?? null, total, byStatus };
  });

  router.get('/statistics/job-series', async (ctx) => {
    const { scope: p, series } = await s.printStatistics.jobSeries(principal(ctx), () => period(ctx, true));
    ctx.body = { interval: p.interval, from: p.from, to: p.to, printer: p.printer ?? null, series: series.map((b) => ({ time: new Date(b.time).toISOString(), count: b.count, pages: b.pages })) };
  });

  router.get('/statistics/printer-count', async (ctx) => {
    ctx.body = await s.printStatistics.printerCount(principal(ctx), () => {
      if (ctx.querystring !== '') throw new AppError('INVALID_QUERY', 'printer-count takes no parameters');
    });
  });

  router.get('/statistics/metadata', (ctx) => {
    s.printStatistics.authorize(principal(ctx));
    const periodParams = [
      { name: 'from', type: 'date', description: 'start of the period (inclusive); default: to minus 24 hours (hour) or 30 days (day)' },
      { name: 'to', type: 'date', description: 'end of the period (exclusive); default: now' },
      { name: 'printer', type: 'text', description: 'only jobs of this printer' },
    ];
    ctx.body = {
      statistics: [
        { name: 'job-count', description: 'jobs created in the period, in total and by state', parameters: periodParams, fields: [{ name: 'total', type: 'number' }, { name: 'byStatus', type: 'json' }] },
        { name: 'job-series', description: 'jobs created per hour or day', parameters: [...periodParams, { name: 'interval', type: 'text', description: 'hour (default) or day' }], fields: [{ name: 'time', type: 'date' }, { name: 'count', type: 'number' }, { name: 'pages', type: 'number' }] },
        { name: 'printer-count', description: 'printers by runtime status', parameters: [], fields: [{ name: 'total', type: 'number' }, { name: 'byStatus', type: 'json' }] },
      ],
    };
  });

  return router;
}
