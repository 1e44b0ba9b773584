import type { Readable } from 'node:stream';
import { AppError } from '../../errors/app-error.js';
import { ConfinementError, type PrintConfinement, type PrintTarget } from './confinement.js';
import {
  PrintDeliveryError, type Acknowledgement, type DeliveryWatch, type PhysicalState, type PrintBackend, type PrintBackendContext, type PrintBackendType, type PrintTicket,
} from './print-backend.js';
import { directoryBackendType } from './directory/directory-backend.js';
import { ippBackendType } from './ipp/ipp-backend.js';
import { lprBackendType } from './lpr/lpr-backend.js';
import { socketBackendType } from './socket/socket-backend.js';

/**
 * Every print backend, in one place (a registry of its own: print backends
 * are devices behind printers, not services).
 */
export const PRINT_BACKEND_TYPES: readonly PrintBackendType[] = [directoryBackendType, socketBackendType, ippBackendType, lprBackendType];

/**
 * The backend for a printer's `connection`: 400 when it does not parse or no
 * backend serves its scheme. The backend is wrapped in the confinement rule
 * (`confinement.ts`): every send and device check first judges its target,
 * so a refused one fails before any connect, whichever backend it is.
 */
export function printBackendFor(connection: string, ctx: PrintBackendContext, types = PRINT_BACKEND_TYPES): PrintBackend {
  let url: URL;
  try {
    url = new URL(connection);
  } catch {
    throw new AppError('INVALID_CONNECTION', `"${connection.slice(0, 200)}" is not a URL (e.g. ipp://host/printer, file:///var/spool/out)`);
  }
  const scheme = url.protocol.replace(/:$/, '');
  const type = types.find((t) => t.schemes.includes(scheme));
  if (!type) {
    const known = types.flatMap((t) => t.schemes);
    throw new AppError('UNSUPPORTED_CONNECTION', `no print backend for ${scheme}:// (known: ${known.join(', ')})`, { scheme, known });
  }
  return new ConfinedBackend(type.create(url, ctx), ctx.confinement);
}

/**
 * A printer's `connection` checked for creating or changing the printer: the
 * URL (400 as `printBackendFor`) and the confinement rule (400
 * `CONNECTION_FORBIDDEN`). A name that does not resolve now is taken: it is
 * judged again before every connect.
 */
export async function checkPrintConnection(connection: string, ctx: PrintBackendContext, types = PRINT_BACKEND_TYPES): Promise<PrintBackend> {
  const backend = printBackendFor(connection, ctx, types);
  let timer: NodeJS.Timeout | undefined;
  try {
    // a resolver that does not answer in time is a name that does not resolve now
    const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, ctx.timeouts?.connectMs ?? 10_000)));
    await Promise.race([ctx.confinement.check(backend.target), late]);
  } catch (err) {
    if (err instanceof ConfinementError) throw new AppError('CONNECTION_FORBIDDEN', err.message, { connection: backend.connection });
  } finally {
    clearTimeout(timer);
  }
  return backend;
}

/** A backend behind the confinement rule: a refused target fails the delivery (`refused`) or the device check before the backend runs. */
class ConfinedBackend implements PrintBackend {
  constructor(private readonly inner: PrintBackend, private readonly confinement: PrintConfinement) {}

  get connection(): string {
    return this.inner.connection;
  }

  get target(): PrintTarget {
    return this.inner.target;
  }

  async send(ticket: PrintTicket, content: Readable, signal: AbortSignal, watch?: DeliveryWatch): Promise<Acknowledgement> {
    const refusal = await this.refusal();
    if (refusal) {
      content.destroy();
      throw new PrintDeliveryError('refused', refusal.message, { cause: refusal });
    }
    return this.inner.send(ticket, content, signal, watch);
  }

  async checkPhysical(signal: AbortSignal): Promise<PhysicalState> {
    const refusal = await this.refusal();
    if (refusal) return { reachable: false, message: refusal.message, checked: new Date() };
    return this.inner.checkPhysical(signal);
  }

  private async refusal(): Promise<ConfinementError | undefined> {
    try {
      await this.confinement.check(this.inner.target);
      return undefined;
    } catch (err) {
      // any other failure (a name that does not resolve) is the backend's to meet and report
      return err instanceof ConfinementError ? err : undefined;
    }
  }
}
