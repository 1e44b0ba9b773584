import { LeaseLostError } from './lease.js';

/**
 * The lease a write must still hold: a single-instance connector's writes to
 * its shared rows carry it, and the statement itself checks it, so a holder
 * that was paused (SIGSTOP, a long GC, a frozen VM) past its lease and wakes
 * up after another process took over writes nothing more. Absent on the
 * embedded database (one process, no lease).
 */
export interface Fence {
  /** `connector_leases.name`, e.g. `service:hotfolder`. */
  lease: string;
  holder: string;
}

/**
 * A SQL condition that holds while `fence` does (always when there is none):
 * `$<name>` and `$<holder>` are the statement's parameters for the lease name
 * and holder (both NULL without a fence). Uses the database's clock, as the
 * lease itself does.
 */
export function fenceHolds(name: string, holder: string): string {
  return `(${name}::text IS NULL OR EXISTS (SELECT 1 FROM connector_leases fence
    WHERE fence.name = ${name}::text AND fence.holder = ${holder}::text AND fence.expires > now()))`;
}

/** The fence's two parameters, in `fenceHolds`' order. */
export const fenceParams = (fence: Fence | undefined): [string | null, string | null] => [fence?.lease ?? null, fence?.holder ?? null];

/** The error of a fenced write that found the lease gone: the writer must stop touching shared things. */
export function fencedOut(fence: Fence | undefined): LeaseLostError {
  return new LeaseLostError(`lease ${fence?.lease ?? '?'} is no longer held by ${fence?.holder ?? '?'}: write refused`);
}
