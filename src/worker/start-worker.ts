import type { Area } from '../areas/area.js';
import { outboxPort } from '../connectors/ports.js';
import { startWorkers, type WorkerPool } from '../queue/job-queue.js';
import type { Services } from '../runtime/services.js';
import { workPort } from '../runtime/work-port.js';
import { jobHandlers } from './handlers.js';
import { holdLiveness, type LivenessWitness } from './liveness-store.js';
import { reconcile } from './reconciler.js';
import { takeoverPass } from './takeover.js';

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
  // The process's liveness identity (PostgreSQL only), held before any job starts: the workers carry it as
  // their name, so that another process can prove this one dead and take its printers over at once.
  // Without it (the lock could not be taken) the workers run unnamed, and a crash waits for BullMQ's lock.
  let witness: LivenessWitness | undefined;
  const witnessed = holdLiveness(s.db, log).then((w) => void (witness = w), (err: unknown) => {
    log.error({ err }, 'cannot hold the liveness lock: this worker\'s jobs cannot be taken over sooner after a crash');
  });
  const workers: WorkerPool = startWorkers(jobHandlers(s, areas, workersStopped.signal, workersStopping.signal), {
    url: config.redis.url, prefix: config.redis.prefix, log: log.child({ component: 'worker' }),
    concurrency: config.queues.concurrency, lockDurationMs: config.queues.lockDurationMs,
    ready: Promise.all([s.queue.bound(), witnessed]).then(() => undefined), name: () => witness?.identity,
    onOutcome: (queue, name, outcome) => s.metrics.jobOutcomes.inc({ queue, name, outcome }),
    reachable: () => s.db.ping().then(() => true, () => false),
  });
  // Every few seconds: runs of long-lived jobs left by a worker proven dead are queued again (takeover.ts).
  // A pass that fails (Redis or the database away) is logged once per outage, not every period.
  let takingOver: Promise<unknown> | undefined;
  let takeover: (() => Promise<number>) | undefined;
  let takeoverFailing = false;
  const takeoverTimer = setInterval(() => {
    if (!witness || takingOver) return;
    takeover ??= takeoverPass(s, witness.identity);
    takingOver = takeover()
      .then(() => {
        if (takeoverFailing) log.info('takeover passes again');
        takeoverFailing = false;
      }, (err: unknown) => {
        if (!takeoverFailing) log.warn({ err }, 'takeover pass failed; trying every period, logged again once it passes');
        takeoverFailing = true;
      })
      .finally(() => (takingOver = undefined));
  }, config.queues.takeoverIntervalMs);
  takeoverTimer.unref();
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
      clearInterval(takeoverTimer);
      await s.registry.stop();
      clearInterval(timer);
      clearTimeout(retry);
      // a reconcile pass in flight finishes before its queue and database close (bounded: with
      // Redis gone its commands wait for a reconnection that may never come)
      if (passing) await Promise.race([passing, new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
      await workers.close(config.server.shutdownTimeoutMs / 2);
      workersStopped.abort();
      await takingOver;
      // alive until its jobs are drained: released after the workers stopped, never before
      await witnessed;
      await witness?.release();
    },
  };
}
