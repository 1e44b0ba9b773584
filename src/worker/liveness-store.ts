import { randomUUID } from 'node:crypto';
import type { Database, HeldLock, Sql } from '../storage/driver/database.js';
import type { Logger } from '../logging/logger.js';

/**
 * Worker liveness, witnessed by PostgreSQL: each worker process holds a
 * session-level advisory lock on its own identity, on a connection of its
 * own, for its whole life (`Database.holdLock`). The kernel closes a killed
 * process's connection, so its lock frees at once; a process that is slow,
 * stopped (SIGSTOP) or in a long GC keeps its connection and its lock. "No
 * session holds the identity's lock" is the proof that the worker is dead.
 * The identity is also the process's BullMQ worker name, which BullMQ
 * writes on every job it starts (`processedBy`).
 *
 * This module touches no table: it holds the lock and reads `pg_locks`.
 */

/** Advisory lock class of worker identities (the dispatch lock is 7209, task reports 7210). */
export const LIVENESS_LOCK_CLASS = 7211;

/** Every identity starts with this, so a worker name of another kind (an older deploy, a tool) is never judged. */
export const WORKER_IDENTITY_PREFIX = 'wcr-worker:';

/** A worker process's identity, held for its life. */
export interface LivenessWitness {
  /** The identity (the BullMQ worker name of this process's workers). */
  readonly identity: string;
  /** Whether the lock is held now (false while its connection is being replaced). */
  held(): boolean;
  /** Frees the identity (after the workers have stopped). */
  release(): Promise<void>;
}

/**
 * Takes a fresh identity's lock; undefined on PGlite (one process: there is
 * no other worker to take anything over). A new identity is drawn when
 * another session holds the one drawn (two identities with the same
 * `hashtext`).
 */
export async function holdLiveness(db: Database, log: Logger): Promise<LivenessWitness | undefined> {
  if (!db.holdLock) return undefined;
  for (;;) {
    const identity = `${WORKER_IDENTITY_PREFIX}${randomUUID()}`;
    const lock: HeldLock | undefined = await db.holdLock(LIVENESS_LOCK_CLASS, identity, {
      onLost: (err) => log.warn({ err, identity }, 'liveness connection lost: other workers may take this worker\'s printers over; reconnecting'),
      onHeld: () => log.info({ identity }, 'liveness lock held again'),
      onRefused: () => log.error({ identity }, 'liveness lock held by another session; trying again'),
    });
    if (lock) return { identity, held: () => lock.held(), release: () => lock.release() };
  }
}

/**
 * The identities among `identities` that no session of this database holds
 * the liveness lock of: their processes are dead (or their witness
 * connection is lost). A hash shared with a live identity reads as alive:
 * the error is always on the safe side.
 */
export async function deadWorkers(sql: Sql, identities: readonly string[]): Promise<string[]> {
  if (identities.length === 0) return [];
  const { rows } = await sql.query<{ identity: string }>(
    `SELECT w.identity FROM unnest($1::text[]) AS w(identity)
      WHERE NOT EXISTS (
        SELECT 1 FROM pg_locks l
         WHERE l.locktype = 'advisory' AND l.granted
           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
           AND l.classid = $2::bigint::oid AND l.objsubid = 2
           AND l.objid = (hashtext(w.identity)::bigint & 4294967295)::oid)`,
    [identities, LIVENESS_LOCK_CLASS]);
  return rows.map((r) => r.identity);
}
