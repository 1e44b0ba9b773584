import { jobIdFor, parseJob, type JobData, type JobName } from '../queue/jobs.js';
import { isTx, type Sql } from '../storage/driver/database.js';
import { insertOutbox, type OutboxRow } from './outbox-store.js';

/**
 * The one way request paths (areas, and later connectors) ask for background
 * work: `add` writes the job into the outbox inside the caller's transaction,
 * so the job exists exactly when the state change that calls for it commits,
 * and the request never waits on Redis. A relay enqueues it moments later.
 */
export interface Outbox {
  /**
   * Validates the payload (`InvalidJobError`), stores the job under its
   * derived id (adding the same job twice stores it once) and returns the id.
   */
  add<N extends JobName>(tx: Sql, name: N, data: JobData<N>): Promise<string>;
}

/** This process's relay, as the outbox sees it (src/outbox/relay.ts). */
export interface LocalRelay {
  /** True while it can take rows at commit (running, Redis taking jobs). */
  readonly takesRows: boolean;
  /** How long a row claimed at insert stays claimed. */
  readonly leaseSec: number;
  /** Enqueues a committed row claimed for it at insert. */
  take(row: OutboxRow): void;
  /** Looks for unclaimed rows. */
  wake(): void;
}

/**
 * The outbox of a process. With its relay running, rows are inserted already
 * claimed and handed over at commit: the job reaches Redis without a claim
 * round trip or a NOTIFY (the launch-to-running path stays as short as a
 * direct enqueue). If the process dies first, the claim lapses and any relay
 * takes the row. Otherwise (no relay, Redis down) rows are left unclaimed and
 * the NOTIFY wakes the relays.
 */
export function createOutbox(local?: LocalRelay): Outbox {
  return {
    async add(tx, name, data) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      const lease = local?.takesRows ? local.leaseSec : null;
      const id = await insertOutbox(tx, name, jobId, payload, lease);
      if (!local) return jobId;
      const committed = id !== undefined && lease !== null ? () => local.take({ id, name, data: payload }) : () => local.wake();
      if (isTx(tx)) tx.afterCommit(committed);
      else committed(); // autocommitted already
      return jobId;
    },
  };
}
