import { jobIdFor, parseJob, type JobData, type JobName } from '../queue/jobs.js';
import type { Sql } from '../storage/driver/database.js';
import { insertOutbox } from './outbox-store.js';

/**
 * The one way request paths (areas, and later connectors) ask for background
 * work: `add` writes the job into the outbox inside the caller's transaction,
 * so the job exists exactly when the state change that calls for it commits,
 * and the request never waits on Redis. The relay enqueues it moments later.
 */
export interface Outbox {
  /**
   * Validates the payload (`InvalidJobError`), stores the job under its
   * derived id (adding the same job twice stores it once) and returns the id.
   */
  add<N extends JobName>(tx: Sql, name: N, data: JobData<N>): Promise<string>;
}

export const outbox: Outbox = {
  async add(tx, name, data) {
    const payload = parseJob(name, data);
    const jobId = jobIdFor(name, payload);
    await insertOutbox(tx, name, jobId, payload);
    return jobId;
  },
};
