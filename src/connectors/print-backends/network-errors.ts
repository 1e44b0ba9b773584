import { ConfinementError } from './confinement.js';
import { PrintDeliveryError } from './print-backend.js';

/**
 * Connect errors after which nothing reached the device and a later try may
 * work: the job is postponed. Any other connect error (a name that does not
 * resolve, an address that cannot be used) will not heal by waiting.
 */
export const TRANSIENT: ReadonlySet<string> = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EHOSTDOWN', 'ENETDOWN', 'ECONNRESET', 'EPIPE', 'EAI_AGAIN', 'ECONNABORTED']);

/** An error's code for messages (the errno code, else its message). */
export const codeOf = (err: unknown): string => (err as NodeJS.ErrnoException | undefined)?.code ?? (err as Error | undefined)?.message ?? String(err);

/** A connection that made no progress for the idle time (`code` as a socket's timeout). */
export class IdleTimeout extends Error {
  override readonly name = 'IdleTimeout';
  readonly code = 'ETIMEDOUT';
}

/** How a failed connect (through `PrintConfinement.connect`) ends a delivery: nothing was sent. */
export function connectFailure(err: unknown, connection: string): PrintDeliveryError {
  if (err instanceof ConfinementError) return new PrintDeliveryError('refused', err.message, { cause: err });
  const code = codeOf(err);
  if (TRANSIENT.has(code) || (err as Error | undefined)?.name === 'AbortError') {
    return new PrintDeliveryError('not-delivered', `${connection} not reachable: ${code}`, { cause: err });
  }
  return new PrintDeliveryError('refused', `${connection} cannot be used: ${code}`, { cause: err });
}
