import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../logging/logger.js';
import type { Database } from '../../storage/driver/database.js';
import type { Connector } from '../connector.js';
import type { IntakeFacet } from '../facets/intake.js';
import type { IntakePorts } from '../ports.js';
import { Lease, leaseName } from './lease.js';

/** Pause before starting again after `start` failed. */
const RETRY_MS = 5000;

/** Resolves when `signal` aborts. */
const aborted = (signal: AbortSignal) => new Promise<void>((resolve) => {
  if (signal.aborted) resolve();
  else signal.addEventListener('abort', () => resolve(), { once: true });
});

/** Sleeps, but wakes at once when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal, ref: false }).catch(() => {});

export interface IntakeRunnerDeps {
  db: Database;
  ports: IntakePorts;
  /** This process's lease holder id. */
  holder: string;
  log: Logger;
  /** Pause before starting again after `start` failed (default 5 s). */
  retryMs?: number;
}

/**
 * Runs one connector's intake in this worker process: start, wait for the
 * end (shutdown or a lost lease), stop; again after a failure. For a
 * single-instance connector on PostgreSQL each run happens under the
 * service's lease; the other processes poll for it every third of the TTL
 * and take over once the holder stops renewing. On PGlite (one process) the
 * lease is trivially held.
 */
export class IntakeRunner {
  private readonly stopping = new AbortController();
  private loop?: Promise<void>;

  constructor(
    private readonly connector: Connector & { intake: IntakeFacet },
    private readonly deps: IntakeRunnerDeps,
  ) {}

  start(): void {
    this.loop ??= this.run().catch((err: unknown) => this.deps.log.error({ err }, 'intake runner failed'));
  }

  /** Ends the current run (stop, release the lease) and the loop. */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { db, log, holder } = this.deps;
    const single = this.connector.singleInstance;
    const lease = single && db.kind === 'postgres'
      ? new Lease(db, leaseName(this.connector.sid), holder, single.leaseTtlMs, log)
      : undefined;
    let waitingLogged = false;
    while (!this.stopping.signal.aborted) {
      if (lease && !(await lease.acquire())) {
        if (!waitingLogged) log.info({ lease: lease.name }, 'single-instance: another process runs it; waiting for the lease');
        waitingLogged = true;
        await pause(lease.ttlMs / 3, this.stopping.signal);
        continue;
      }
      waitingLogged = false;
      if (this.stopping.signal.aborted) {
        await lease?.release();
        break;
      }
      const ok = await this.runOnce(lease);
      if (!ok) await pause(this.deps.retryMs ?? RETRY_MS, this.stopping.signal);
    }
  }

  /** One run: start, wait until stopped or the lease is lost, stop. False when `start` failed. */
  private async runOnce(lease: Lease | undefined): Promise<boolean> {
    const { log, ports } = this.deps;
    const { intake } = this.connector;
    const run = new AbortController();
    const onStop = () => run.abort(new Error('shutting down'));
    this.stopping.signal.addEventListener('abort', onStop, { once: true });
    lease?.hold((err) => run.abort(err));
    let started = false;
    try {
      await intake.start(ports, run.signal);
      started = true;
      log.info({ intake: intake.description, lease: lease?.holder }, 'intake started');
      await aborted(run.signal);
    } catch (err) {
      log.error({ err }, 'intake failed to start; will retry');
      run.abort(err);
    } finally {
      this.stopping.signal.removeEventListener('abort', onStop);
    }
    await intake.stop().catch((err: unknown) => log.error({ err }, 'intake did not stop cleanly'));
    // released only after stop: the next holder never overlaps with work still in hand
    await lease?.release();
    log.info('intake stopped');
    return started;
  }
}
