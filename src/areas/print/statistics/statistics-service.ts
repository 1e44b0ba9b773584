import type { Principal } from '../../../auth/principal.js';
import type { Services } from '../../../runtime/services.js';
import { jobCount, jobSeries, printerCount, type JobScope } from './statistics-store.js';

export type Period = JobScope & { interval: 'hour' | 'day' };

/**
 * Print statistics (`/v3/statistics/...`): counts over all jobs and
 * printers, for the `statistics` area's read right. No HTTP.
 *
 * The period comes as a function, read after the rights check: a caller
 * without the right is refused (403) whatever it asked for.
 */
export class PrintStatisticsService {
  constructor(private readonly s: Pick<Services, 'db' | 'policy'>) {}

  /** Only the rights check, for what needs no database (the metadata). */
  authorize(p: Principal): void {
    this.s.policy.require(p, 'statistics', 'read');
  }

  /** Jobs created in the period, in total and by state. */
  async jobCount(p: Principal, period: () => JobScope): Promise<{ scope: JobScope; total: number; byStatus: Record<string, number> }> {
    this.authorize(p);
    const scope = period();
    return { scope, ...(await jobCount(this.s.db, scope)) };
  }

  /** Jobs created per hour or day of the period, every bucket present. */
  async jobSeries(p: Principal, period: () => Period): Promise<{ scope: Period; series: { time: Date; count: number; pages: number }[] }> {
    this.authorize(p);
    const scope = period();
    return { scope, series: await jobSeries(this.s.db, scope, scope.interval) };
  }

  /** Printers by runtime status; `checkQuery` refuses parameters (there are none). */
  async printerCount(p: Principal, checkQuery: () => void): Promise<{ total: number; byStatus: Record<string, number> }> {
    this.authorize(p);
    checkQuery();
    return printerCount(this.s.db);
  }
}
