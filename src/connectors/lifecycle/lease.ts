import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../../logging/logger.js';
import type { Sql } from '../../storage/driver/database.js';
import { leaseStore } from './lease-store.js';

/** This process's holder id: `host:pid:random` (the random part tells a restarted pid apart). */
export const newHolderId = () => `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;

/** The lease of a single-instance service. */
export const leaseName = (sid: string) => `service:${sid}`;

/** Why a held lease ended without `release`. */
export class LeaseLostError extends Error {
  override readonly name = 'LeaseLostError';
}

/**
 * One named lease in `connector_leases`. `acquire` tries once; `hold` keeps
 * it, renewing every third of the TTL, and calls `onLost` when it is gone: a
 * renewal found another holder, or renewals failed until the lease may have
 * expired. The local deadline is counted from before each renewal was sent,
 * so this process gives up no later than the database lets another take over.
 */
export class Lease {
  private timer?: NodeJS.Timeout;
  private watchdog?: NodeJS.Timeout;
  private held = false;
  /** Acquired at least once: a row of this holder may exist. */
  private acquired = false;
  private onWatchdog: () => void = () => {};

  constructor(
    private readonly db: Sql,
    readonly name: string,
    readonly holder: string,
    readonly ttlMs: number,
    private readonly log: Logger,
  ) {}

  /** True when this process holds the lease now. A database error counts as "not acquired". */
  async acquire(): Promise<boolean> {
    const sent = performance.now(); // monotonic: a wall-clock jump must not stretch the deadline
    try {
      if (!(await leaseStore.acquire(this.db, this.name, this.holder, this.ttlMs))) return false;
    } catch (err) {
      this.log.warn({ err, lease: this.name }, 'cannot take the lease; will retry');
      return false;
    }
    this.held = true;
    this.acquired = true;
    this.armWatchdog(sent);
    return true;
  }

  /** Renews until `release` or loss; `onLost` runs at most once. */
  hold(onLost: (err: LeaseLostError) => void): void {
    const lost = (why: string) => {
      if (!this.held) return;
      this.disarm();
      this.log.warn({ lease: this.name, holder: this.holder }, `lease lost: ${why}`);
      onLost(new LeaseLostError(`lease ${this.name} lost: ${why}`));
    };
    this.onWatchdog = () => lost('not renewed in time');
    const tick = async () => {
      const sent = performance.now();
      try {
        const renewed = await leaseStore.renew(this.db, this.name, this.holder, this.ttlMs);
        if (!this.held) return; // released meanwhile
        if (!renewed) return lost('another process holds it');
        this.armWatchdog(sent);
      } catch (err) {
        this.log.warn({ err, lease: this.name }, 'cannot renew the lease; retrying');
      }
      if (this.held) this.timer = unref(setTimeout(() => void tick(), this.ttlMs / 3));
    };
    this.timer = unref(setTimeout(() => void tick(), this.ttlMs / 3));
  }

  /**
   * Stops renewing and deletes the lease if it is still ours, so a waiting
   * process takes over at once. Deleted even when this process counted it
   * lost (a renewal came too late): the row may still name this holder, and
   * the delete is guarded by the holder, so another's lease is never touched.
   */
  async release(): Promise<void> {
    const everHeld = this.acquired;
    this.disarm();
    if (!everHeld) return;
    await leaseStore.release(this.db, this.name, this.holder)
      .catch((err: unknown) => this.log.warn({ err, lease: this.name }, 'cannot release the lease; it expires on its own'));
  }

  private armWatchdog(sentAt: number): void {
    clearTimeout(this.watchdog);
    // a tenth of the TTL as margin: stop before the database could hand the lease on
    const deadline = sentAt + this.ttlMs * 0.9;
    this.watchdog = unref(setTimeout(() => this.onWatchdog(), Math.max(0, deadline - performance.now())));
  }

  private disarm(): void {
    this.held = false;
    clearTimeout(this.timer);
    clearTimeout(this.watchdog);
  }
}

function unref(t: NodeJS.Timeout): NodeJS.Timeout {
  t.unref();
  return t;
}
