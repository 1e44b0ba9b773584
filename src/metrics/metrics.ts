import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Prometheus metrics of one process: HTTP durations, queue depths, job outcomes. */
export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly jobOutcomes: Counter<'queue' | 'name' | 'outcome'>;
  readonly queueDepth: Gauge<'queue' | 'state'>;
  readonly partFilesRemoved: Counter<'where'>;

  constructor(depths?: () => Promise<Record<string, Record<string, number>>>) {
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request duration by method, route template and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [this.registry],
    });
    this.jobOutcomes = new Counter({
      name: 'queue_job_outcomes_total',
      help: 'Background job attempts by queue, job name and outcome (completed, failed, retried)',
      labelNames: ['queue', 'name', 'outcome'],
      registers: [this.registry],
    });
    this.partFilesRemoved = new Counter({
      name: 'part_files_removed_total',
      help: 'Temporary .part files of killed uploads and imports removed by this process (where: blobs, filesystem)',
      labelNames: ['where'],
      registers: [this.registry],
    });
    this.queueDepth = new Gauge({
      name: 'queue_jobs',
      help: 'Jobs per queue and state, read from Redis at scrape time',
      labelNames: ['queue', 'state'],
      registers: [this.registry],
      async collect() {
        if (!depths) return;
        const all = await depths().catch(() => undefined);
        if (!all) return;
        for (const [queue, states] of Object.entries(all)) {
          for (const [state, n] of Object.entries(states)) this.set({ queue, state }, n);
        }
      },
    });
  }
}
