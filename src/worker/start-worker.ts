import type { Area } from '../areas/area.js';
import { outboxPort } from '../connectors/ports.js';
import { startWorkers, type WorkerPool } from '../queue/job-queue.js';
import type { Services } from '../runtime/services.js';
import { workPort } from '../runtime/work-port.js';
import { jobHandlers } from './handlers.js';
import { reconcile } from './reconciler.js';

/** The worker side of one process, started by the runtime for roles `all` and `worker`. */
export interface WorkerSide {
  /**
   * Stops intake, the reconcile timer (a pass in flight may finish), then
   * drains the workers; the runtime closes the relay, the queues and the
   * database after this.
   */
  stop(): Promise<void>;
}

/**
 * Starts what a worker process runs besides the API: the BullMQ workers with
 * every area's job handlers, the reconciler (at once, then every
 * `queues.reconcileIntervalMs`), the housekeeping schedule and the
 * connectors' own activity (intake). None of them waits for Redis: with Redis
 * down the process still starts (`/readyz` names Redis in its checks) and the reconciler
 * catches up once Redis is back.
 */
export function startWorkerSide(s: Services, areas: readonly Area[]): WorkerSide {
  const { config, log } = s;
  // aborted once the workers have stopped: what their handlers left scheduled (dispatch tail checks) is cancelled
  const workersStopped = new AbortController();
  // aborted when stopping begins: long runs (a printer's dispatch) finish the step in progress and take nothing new
  const workersStopping = new AbortController();
  const workers: WorkerPool = startWorkers(jobHandlers(s, areas, workersStopped.signal, workersStopping.signal), {
    url: config.redis.url, prefix: config.redis.prefix, log: log.child({ component: 'worker' }),
    concurrency: config.queues.concurrency, lockDurationMs: config.queues.lockDurationMs, ready: s.queue.bound(),
    onOutcome: (queue, name, outcome) => s.metrics.jobOutcomes.inc({ queue, name, outcome }),
  });
  log.debug('workers started; reconciling');
  // One pass at a time: a slow pass (Redis stalling) must not pile up behind the timer.
  // A failed pass (the database or Redis away) is tried again soon, 2 s doubling up to the interval,
  // and Redis coming back starts one at once: what an outage left undone is repaired within seconds
  // of the return, not at the next pass a minute later.
  let passing: Promise<void> | undefined;
  let failures = 0;
  let retry: NodeJS.Timeout | undefined;
  const tick = () => {
    clearTimeout(retry);
    passing ??= reconcile(s, areas)
      .then(() => {
        if (failures > 0) log.info({ failures }, 'reconcile passed again');
        failures = 0;
      }, (err: unknown) => {
        failures += 1;
        const retryInMs = Math.min(config.queues.reconcileIntervalMs, 2000 * 2 ** Math.min(failures - 1, 6));
        log.warn({ err, retryInMs }, 'reconcile failed; will retry');
        retry = setTimeout(tick, retryInMs);
        retry.unref();
      })
      .finally(() => (passing = undefined));
  };
  s.queue.onReconnect(() => {
    if (workersStopping.signal.aborted) return;
    log.info('Redis is back; reconciling now');
    tick();
  });
  tick();
  const timer = setInterval(tick, config.queues.reconcileIntervalMs);
  timer.unref();
  void s.queue.schedule('housekeeping.run', {}, { everyMs: config.queues.housekeepingIntervalMs })
    .catch((err: unknown) => log.warn({ err }, 'cannot schedule housekeeping'));
  s.registry.start({ db: s.db, outbox: outboxPort(s.outbox, s.db), work: workPort(s), metrics: (sid) => s.metrics.intake(sid), messages: s.messages });
  log.info({ concurrency: config.queues.concurrency }, 'workers running');

  return {
    async stop() {
      workersStopping.abort();
      await s.registry.stop();
      clearInterval(timer);
      clearTimeout(retry);
      // a reconcile pass in flight finishes before its queue and database close (bounded: with
      // Redis gone its commands wait for a reconnection that may never come)
      if (passing) await Promise.race([passing, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      await workers.close(config.server.shutdownTimeoutMs / 2);
      workersStopped.abort();
    },
  };
}
