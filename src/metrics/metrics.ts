import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

type Depths = Record<string, Record<string, number>>;

/** How often queue depths are read from Redis, and how long one read may take. */
const SAMPLE_MS = 5000;
const SAMPLE_TIMEOUT_MS = 3000;

/**
 * Prometheus metrics of one process: HTTP durations, queue depths, job
 * outcomes, the Redis connection's state. Queue depths are sampled in the background and the scrape reads
 * the last sample, so `/metrics` never waits on Redis (a Redis that is down
 * leaves the last values and a stale `queue_depth_sample_age_seconds`).
 */
export class Metrics {
  readonly registry = new Registry();
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  readonly jobOutcomes: Counter<'queue' | 'name' | 'outcome'>;
  readonly queueDepth: Gauge<'queue' | 'state'>;
  readonly partFilesRemoved: Counter<'where'>;
  readonly intakeFiles: Counter<'sid' | 'outcome' | 'code'>;
  readonly intakeLatency: Histogram<'sid'>;
  readonly reconcileRepairFailures: Counter<'area'>;
  private last?: { at: number; depths: Depths };
  private timer?: NodeJS.Timeout;

  /** One service's intake metrics (the port an intake connector reports through). */
  intake(sid: string): { taken(seconds: number): void; failed(code: string): void } {
    return {
      taken: (seconds) => {
        this.intakeFiles.inc({ sid, outcome: 'taken', code: '' });
        this.intakeLatency.observe({ sid }, seconds);
      },
      failed: (code) => this.intakeFiles.inc({ sid, outcome: 'failed', code }),
    };
  }

  /**
   * `depths` reads the queue depths (sampled in the background); `redisConnected`
   * reads the queue connection's state (no round trip), for `redis_connected`.
   */
  constructor(private readonly depths?: () => Promise<Depths>, redisConnected?: () => boolean) {
    collectDefaultMetrics({ register: this.registry });
    if (redisConnected) {
      new Gauge({
        name: 'redis_connected',
        help: 'Whether the queue connection to Redis is up (1) or not (0); requests do not need it, background work waits for it',
        registers: [this.registry],
        collect() {
          this.set(redisConnected() ? 1 : 0);
        },
      });
    }
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
    this.intakeFiles = new Counter({
      name: 'intake_files_total',
      help: 'Files an intake service (hot folder, scheduled import) took or failed (moved to error/), by service, outcome and error code',
      labelNames: ['sid', 'outcome', 'code'],
      registers: [this.registry],
    });
    this.intakeLatency = new Histogram({
      name: 'intake_drop_to_stored_seconds',
      help: 'From a file\'s last change in the hot folder (its mtime) to its document stored, by service',
      labelNames: ['sid'],
      buckets: [0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30, 60, 300],
      registers: [this.registry],
    });
    this.reconcileRepairFailures = new Counter({
      name: 'reconcile_repair_failures_total',
      help: 'Reconciler repairs (enqueue, re-create, abandon) that threw; the pass went on with the rest',
      labelNames: ['area'],
      registers: [this.registry],
    });
    const lastSample = () => this.last;
    this.queueDepth = new Gauge({
      name: 'queue_jobs',
      help: 'Jobs per queue and state, from the last background sample of Redis',
      labelNames: ['queue', 'state'],
      registers: [this.registry],
      collect() {
        for (const [queue, states] of Object.entries(lastSample()?.depths ?? {})) {
          for (const [state, n] of Object.entries(states)) this.set({ queue, state }, n);
        }
      },
    });
    new Gauge({
      name: 'queue_depth_sample_age_seconds',
      help: 'Age of the last queue depth sample (grows while Redis does not answer)',
      registers: [this.registry],
      collect() {
        const last = lastSample();
        if (last) this.set((Date.now() - last.at) / 1000);
      },
    });
    if (depths) {
      void this.sample();
      this.timer = setInterval(() => void this.sample(), SAMPLE_MS);
      this.timer.unref();
    }
  }

  /** Reads the depths once, bounded; a failure or timeout keeps the previous sample. */
  private async sample(): Promise<void> {
    let timeout: NodeJS.Timeout | undefined;
    const depths = await Promise.race([
      this.depths!().catch(() => undefined),
      new Promise<undefined>((resolve) => (timeout = setTimeout(() => resolve(undefined), SAMPLE_TIMEOUT_MS).unref())),
    ]);
    clearTimeout(timeout);
    if (depths) this.last = { at: Date.now(), depths };
  }

  /** Stops sampling (shutdown). */
  stop(): void {
    clearInterval(this.timer);
  }
}
