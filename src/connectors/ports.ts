import type { Logger } from '../logging/logger.js';
import type { Outbox } from '../outbox/outbox.js';
import type { JobData, JobName } from '../queue/jobs.js';
import type { Sql } from '../storage/driver/database.js';

/**
 * Narrow ports: what a connector gets at start instead of the runtime's
 * services. A connector never sees the whole `Database` or the queue: it
 * reaches its own rows through `state`, queue work through `outbox`.
 */
export interface ConnectorPorts {
  /** The connector's logger (bound to its `sid`). */
  readonly log: Logger;
  /** Queue work (jobs declared in `src/queue/jobs.ts`). */
  readonly outbox: OutboxPort;
  /** Durable key/value state of this service, shared by every process. */
  readonly state: ConnectorStateStore;
}

/**
 * Records a job to run. With `tx`, the job belongs to that transaction: it is
 * delivered only if the transaction commits (the transactional outbox).
 * The runtime wires it to the outbox (`outboxPort`).
 */
export interface OutboxPort {
  add<N extends JobName>(name: N, data: JobData<N>, tx?: Sql): Promise<void>;
}

/**
 * The connectors' outbox port over the runtime's outbox: with `tx`, the job
 * commits with the connector's own change; without, it is written on its own
 * (autocommitted) and relayed at once.
 */
export function outboxPort(outbox: Outbox, db: Sql): OutboxPort {
  return {
    async add(name, data, tx) {
      await outbox.add(tx ?? db, name, data);
    },
  };
}

/** One stored value with the database time it was last written. */
export interface StateEntry {
  key: string;
  value: unknown;
  updated: Date;
}

/**
 * A service's own durable state (`connector_state`, scoped to its `sid`): what
 * an intake connector needs to take each file once, a scheduler's last run, a
 * heartbeat. Values are JSON.
 */
export interface ConnectorStateStore {
  get(key: string): Promise<StateEntry | undefined>;
  /** Inserts or replaces. */
  put(key: string, value: unknown): Promise<void>;
  /** Inserts only when the key is new; false when it already existed (a claim). */
  putIfAbsent(key: string, value: unknown): Promise<boolean>;
  /** Adds `by` (default 1) to the number stored under `key` (absent: 0) in one statement; returns the new number. */
  increment(key: string, by?: number): Promise<number>;
  delete(key: string): Promise<boolean>;
  /** Entries whose key starts with `prefix`, by key, at most `limit` (default 1000). */
  list(prefix: string, limit?: number): Promise<StateEntry[]>;
}
