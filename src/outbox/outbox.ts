import { jobIdFor, parseJob, type JobData, type JobName } from '../queue/jobs.js';
import { isTx, type Sql } from '../storage/driver/database.js';
import { insertOutbox, insertOutboxMany, withOutbox, withOutboxEach, type OutboxRow } from './outbox-store.js';
import type { EnqueueRequest } from '../queue/job-queue.js';

/**
 * The one way request paths (areas, and connectors through `OutboxPort`) ask for background
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
  /** `add` for many jobs in one statement (a task's chunks, a batch of print jobs). Every payload is validated first. */
  addMany(tx: Sql, jobs: readonly EnqueueRequest[]): Promise<string[]>;
  /**
   * `add` fused with one data-modifying statement (an INSERT or UPDATE with
   * RETURNING): the state change and its job are written by a single
   * statement, atomic without a transaction and one round trip instead of
   * four (BEGIN, statement, outbox row, COMMIT). For hot paths such as
   * command launches; returns the statement's rows.
   */
  addWith<N extends JobName, R extends object>(sql: Sql, statement: FusedStatement, name: N, data: JobData<N>): Promise<R[]>;
  /**
   * `addWith` for several jobs whose payloads the statement itself computes
   * (a task run's chunks: the run number and the chunk numbers come from the
   * rows it changes). `jobs` is a SELECT over `main` and the statement's CTEs
   * yielding `(job_id, data)`: the job id must be `jobIdFor(name, data)`.
   * `probes` are payloads of the same shape with the parts known beforehand
   * (one per request the statement serves), validated first (the relay
   * validates every payload again before Redis).
   */
  addEachWith<N extends JobName, R extends object>(sql: Sql, statement: FusedStatement & { jobs: string }, name: N, probes: readonly JobData<N>[]): Promise<R[]>;
}

/**
 * The statement `Outbox.addWith` fuses with its job: an INSERT or UPDATE with
 * RETURNING, optionally with common table expressions around it (PostgreSQL
 * allows data-modifying CTEs only at the top level, so they are given here,
 * not inside `text`).
 */
export interface FusedStatement {
  text: string;
  params: unknown[];
  /** CTEs the statement reads (`a AS (...), b AS (...)`; may be recursive). */
  with?: string;
  /** Further data-modifying CTEs in the same statement, reading the statement's rows as `main` (a log line for the row). */
  also?: string;
  /**
   * A condition (may read the CTEs and `main`) without which the job is not
   * wanted: when false, the statement's change is made and no job stored
   * (a print job for a printer that is held: its resume wakes it).
   */
  jobIf?: string;
  /**
   * Further columns of the answer rows, over `main` and the CTEs (`addEachWith`
   * only): e.g. which request of a batched statement a row belongs to, which
   * RETURNING cannot say for an INSERT … SELECT.
   */
  select?: string;
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
  /** Once the row is committed: the local relay takes it (claimed at insert) or looks for it. */
  const handOver = (sql: Sql, name: string, payload: unknown, id: number | undefined, lease: number | null) => {
    if (!local) return;
    // the job was there already (a wake-up of a printer whose own wake-up is on its way): that row's insert
    // woke a relay or was handed to one; another round would find nothing to claim
    if (id === undefined && lease !== null) return;
    const committed = id !== undefined && lease !== null ? () => local.take({ id, name, data: payload }) : () => local.wake();
    if (isTx(sql)) sql.afterCommit(committed);
    else committed(); // autocommitted already
  };
  return {
    async add(tx, name, data) {
      const payload = parseJob(name, data);
      const jobId = jobIdFor(name, payload);
      const lease = local?.takesRows ? local.leaseSec : null;
      handOver(tx, name, payload, await insertOutbox(tx, name, jobId, payload, lease), lease);
      return jobId;
    },
    async addMany(tx, jobs) {
      const parsed = jobs.map(({ name, data }) => {
        const payload = parseJob(name, data);
        return { name, jobId: jobIdFor(name, payload), data: payload };
      });
      const lease = local?.takesRows ? local.leaseSec : null;
      const rows = await insertOutboxMany(tx, parsed, lease);
      if (local) {
        const committed = lease !== null ? () => rows.forEach((r) => local.take(r)) : () => local.wake();
        if (isTx(tx)) tx.afterCommit(committed);
        else committed();
      }
      return parsed.map((p) => p.jobId);
    },
    async addEachWith(sql, statement, name, probes) {
      for (const probe of probes) parseJob(name, probe);
      const lease = local?.takesRows ? local.leaseSec : null;
      const { rows, jobs } = await withOutboxEach(sql, statement, statement.jobs, name, lease);
      if (local && jobs.length > 0) {
        const committed = lease !== null ? () => jobs.forEach((r) => local.take(r)) : () => local.wake();
        if (isTx(sql)) sql.afterCommit(committed);
        else committed();
      }
      return rows as never;
    },
    async addWith(sql, statement, name, data) {
      const payload = parseJob(name, data);
      const lease = local?.takesRows ? local.leaseSec : null;
      const { rows, id, wanted } = await withOutbox(sql, statement, name, jobIdFor(name, payload), payload, lease);
      if (wanted) handOver(sql, name, payload, id, lease);
      return rows as never;
    },
  };
}
