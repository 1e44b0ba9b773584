import type { IntakePorts } from '../ports.js';

/**
 * The `intake` facet: a long-running watcher (hot folder, scheduled import,
 * mailbox) that brings work in on its own. It runs in worker processes only;
 * the registry starts it, and for a single-instance connector only in the
 * process holding the service's lease.
 *
 * Life cycle, as `ConnectorRegistry` drives it:
 * 1. `start(ports, signal)` (the common ports, the claims of its files, work on
 *    other services, metrics) resolves once the watcher runs (a rejection is
 *    logged and the start retried later; it must leave nothing running);
 * 2. `signal` aborts when the watcher must end: shutdown, or the lease was
 *    lost (another process may already be running it, so stop touching
 *    shared things at once);
 * 3. `stop()` is then awaited: it resolves when nothing of this run is left
 *    (timers cleared, work in hand finished or left for the next start).
 *
 * After `stop()`, `start` may be called again (a new lease). Errors while it
 * runs are the watcher's to handle: log them through `ports.log` and go on;
 * nothing may reject unobserved.
 */
export interface IntakeFacet {
  /** What is watched, for logs and docs (e.g. "hot folder data/in"). */
  readonly description: string;
  start(ports: IntakePorts, signal: AbortSignal): Promise<void>;
  stop(): Promise<void>;
}
