import type { Logger } from '../logging/logger.js';
import type { EnqueueRequest, JobQueue } from '../queue/job-queue.js';
import { InvalidJobError, JOBS, parseJob, type JobName } from '../queue/jobs.js';
import type { Database } from '../storage/driver/database.js';
import { claimOutbox, currentSchema, deleteOutbox, releaseOutbox, type OutboxRow } from './outbox-store.js';
import { WakeLoop } from './wake-loop.js';
import type { LocalRelay } from './outbox.js';

/** The channel migration 003's trigger notifies (payload: the schema). */
export const OUTBOX_CHANNEL = 'wcr_outbox';

export interface RelayOptions {
  /** Rows claimed per round. */
  batch?: number;
  /** A pass this often catches anything a lost notification missed. */
  sweepMs?: number;
  /** How long a claim keeps other relays off (a crashed relay's rows come back after it). */
  leaseSec?: number;
  /** Longest wait for Redis to take one job before the round counts as failed. */
  enqueueTimeoutMs?: number;
  /** Longest pause between attempts while Redis is unreachable. */
  maxBackoffMs?: number;
  /**
   * Rows whose jobs are in Redis are deleted together, at most this long
   * after the first of them (or at once when `batch` are waiting): one
   * DELETE for many hand-overs instead of one per Redis round trip.
   */
  deleteDelayMs?: number;
  /**
   * When rows were committed while a batch was in Redis's hands (the relay is
   * busy), wait this long before the next batch so that it carries more; a
   * row that finds the relay idle goes at once.
   */
  gatherMs?: number;
}

const DEFAULTS: Required<RelayOptions> = { batch: 100, sweepMs: 5000, leaseSec: 30, enqueueTimeoutMs: 2000, maxBackoffMs: 5000, deleteDelayMs: 20, gatherMs: 2 };

/**
 * Moves outbox rows into their BullMQ queues. Woken by NOTIFY when a writing
 * transaction commits (so a job reaches its queue within milliseconds), and by
 * a sweep every few seconds. Any number of processes may relay at once: rows
 * are claimed with SKIP LOCKED under a lease, enqueued with their derived ids
 * (a duplicate add is a no-op), then deleted. With Redis down a round fails
 * fast; the relay backs off, probing with one job at a time, and nothing else
 * in the process waits for it.
 */
export class OutboxRelay implements LocalRelay {
  private readonly opts: Required<RelayOptions>;
  /** Relay rounds, one at a time. */
  private readonly rounds = new WakeLoop(
    () => this.drain().catch((err: unknown) => this.log.warn({ err }, 'outbox relay round failed; the sweep retries')),
    () => this.started && !this.stopped && !this.retry,
  );
  private taken: OutboxRow[] = [];
  private flushing: Promise<void> | undefined;
  private started = false;
  private stopped = false;
  private failures = 0;
  private unlisten: (() => Promise<void>) | undefined;
  private sweep: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  /** Enqueued (or dropped) rows not deleted yet; still claimed, so no relay takes them again meanwhile. */
  private done: number[] = [];
  private deleteTimer: NodeJS.Timeout | undefined;
  private deleting: Promise<void> | undefined;

  constructor(
    private readonly db: Database,
    private readonly queue: JobQueue,
    private readonly log: Logger,
    opts: RelayOptions = {},
  ) {
    this.opts = { ...DEFAULTS, ...opts };
  }

  async start(): Promise<void> {
    const schema = await currentSchema(this.db);
    // other schemas of the same database share the channel; null = the listener reconnected
    this.unlisten = await this.db.listen(OUTBOX_CHANNEL, (payload) => {
      if (payload === null || payload === schema) this.wake();
    });
    this.sweep = setInterval(() => this.wake(), this.opts.sweepMs);
    this.sweep.unref();
    this.started = true;
    this.wake();
  }

  get takesRows(): boolean {
    return this.started && !this.stopped && this.failures === 0 && !this.retry;
  }

  get leaseSec(): number {
    return this.opts.leaseSec;
  }

  /** A row committed in this process, claimed for this relay at insert: enqueued at once, no claim round trip. */
  take(row: OutboxRow): void {
    this.taken.push(row);
    this.flushing ??= this.flush().catch((err: unknown) => this.log.warn({ err }, 'outbox relay: handing over committed jobs failed; their claims lapse'));
  }

  private async flush(): Promise<void> {
    try {
      // rows taken while one batch is in Redis's hands go in the next
      while (this.taken.length > 0) {
        const rows = this.taken.splice(0);
        if ((await this.enqueue(rows)) > 0 && !this.retry) this.backOff();
        if (this.taken.length > 0 && this.opts.gatherMs > 0) await new Promise((resolve) => setTimeout(resolve, this.opts.gatherMs));
      }
    } finally {
      this.flushing = undefined;
    }
  }

  /** Starts a round now, or right after the one running; while backing off, the retry timer decides. */
  wake(): void {
    this.rounds.wake();
  }

  /** Resolves once no round is running and every enqueued row is deleted (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.rounds.current || this.flushing || this.deleting || this.done.length > 0) {
      if (this.done.length > 0) this.deleteDone();
      await Promise.all([this.rounds.current, this.flushing, this.deleting]);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweep);
    clearTimeout(this.retry);
    await this.unlisten?.().catch(() => undefined);
    await this.idle(); // deletes the rows already relayed
  }

  /** Rounds until the outbox is empty or Redis fails. */
  private async drain(): Promise<void> {
    while (!this.stopped) {
      // while Redis seems down, probe with one job rather than pile up adds waiting for it
      const limit = this.failures > 0 ? 1 : this.opts.batch;
      const rows = await claimOutbox(this.db, limit, this.opts.leaseSec);
      if (rows.length === 0) return;
      const failed = await this.enqueue(rows);
      if (failed > 0) {
        this.backOff();
        return;
      }
      if (this.failures > 0) this.log.info('outbox relay: Redis takes jobs again');
      this.failures = 0;
      if (rows.length < limit) return;
    }
  }

  /**
   * Enqueues a claimed batch in one Redis round trip per queue; done and
   * invalid rows are deleted, failed ones released. Returns the failures.
   */
  private async enqueue(rows: OutboxRow[]): Promise<number> {
    const done: number[] = [];
    // a job this version does not know is left claimed for a relay that does (the lease expires)
    let valid = rows.filter((row) => Object.hasOwn(JOBS, row.name));
    let failed: number[] = [];
    const enqueue = () => this.queue.enqueueMany(valid.map((r) => ({ name: r.name, data: r.data }) as EnqueueRequest), { timeoutMs: this.opts.enqueueTimeoutMs });
    if (valid.length > 0) {
      try {
        // enqueueMany validates every payload before Redis sees any: only when one is invalid are they judged one by one
        await enqueue().catch(async (err: unknown) => {
          if (!(err instanceof InvalidJobError)) throw err;
          valid = valid.filter((row) => {
            try {
              parseJob(row.name as JobName, row.data as never);
              return true;
            } catch (invalid) {
              if (!(invalid instanceof InvalidJobError)) throw invalid;
              // cannot succeed on any attempt: drop it rather than block the rows behind it
              this.log.error({ err: invalid, id: row.id, name: row.name }, 'outbox row with an invalid payload dropped');
              done.push(row.id);
              return false;
            }
          });
          if (valid.length > 0) await enqueue();
        });
        done.push(...valid.map((r) => r.id));
      } catch (err) {
        failed = valid.map((r) => r.id);
        if (this.failures === 0) this.log.warn({ err }, 'outbox relay cannot reach Redis; backing off');
      }
    }
    if (done.length > 0) {
      this.done.push(...done);
      if (this.done.length >= this.opts.batch) this.deleteDone();
      else this.deleteTimer ??= setTimeout(() => this.deleteDone(), this.opts.deleteDelayMs);
    }
    await releaseOutbox(this.db, failed);
    return failed.length;
  }

  /**
   * Deletes the rows whose jobs are in Redis, in one statement for all that
   * gathered meanwhile. Until then they stay claimed (the lease is far longer
   * than the delay): should the process die first, another relay enqueues
   * them again under their derived ids once the lease lapses, exactly as when
   * it dies between the enqueue and an immediate delete.
   */
  private deleteDone(): void {
    clearTimeout(this.deleteTimer);
    this.deleteTimer = undefined;
    if (this.deleting || this.done.length === 0) return; // the statement running now re-checks when it ends
    const ids = this.done.splice(0);
    this.deleting = deleteOutbox(this.db, ids)
      .catch((err: unknown) => this.log.warn({ err, rows: ids.length }, 'outbox relay: deleting relayed rows failed; their claims lapse and they are relayed again'))
      .finally(() => {
        this.deleting = undefined;
        if (this.done.length >= this.opts.batch) this.deleteDone();
        else if (this.done.length > 0) this.deleteTimer ??= setTimeout(() => this.deleteDone(), this.opts.deleteDelayMs);
      });
  }

  private backOff(): void {
    this.failures++;
    const delay = Math.min(250 * 2 ** (this.failures - 1), this.opts.maxBackoffMs);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.wake();
    }, delay);
    this.retry.unref();
  }
}
