import type { Readable } from 'node:stream';
import type { Logger } from '../../logging/logger.js';
import type { PrintConfinement, PrintTarget } from './confinement.js';

/** What the device is told about a job; the bytes come as a stream. */
export interface PrintTicket {
  /** The print job's id (letters, digits, `_`, `-`): names the delivery. */
  jobId: string;
  /** Document name (may become a file name; backends sanitize it). */
  name: string;
  user: string;
  mimeType: string;
  copies: number;
  /** Byte length when known (LPR announces it before the data). */
  size?: number;
}

/** The device took the job. */
export interface Acknowledgement {
  /** The device's own id for the job (IPP job-id, the file written), when it has one. */
  deviceJobId?: string;
  message: string;
}

/**
 * How a delivery failed, which decides what dispatch may do next (DESIGN.md
 * section 7: a job is handed to a device at most once):
 *
 * - `not-delivered`: nothing reached the device (unreachable, full disk, the
 *   source failed first, aborted before the first byte): sending it again is
 *   safe, so the job can be postponed and retried;
 * - `refused`: the device answered and refused the job: retrying will not help;
 * - `uncertain`: bytes reached the device but no acknowledgement came:
 *   sending again could print twice, so an operator decides;
 * - `duplicate`: the device already holds this job id; nothing was changed.
 */
export type DeliveryFailure = 'not-delivered' | 'refused' | 'uncertain' | 'duplicate';

/** The only error `send` rejects with. */
export class PrintDeliveryError extends Error {
  override readonly name = 'PrintDeliveryError';
  constructor(readonly kind: DeliveryFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** Result of a device probe (`checkPhysical`), stored on the printer. */
export interface PhysicalState {
  reachable: boolean;
  message: string;
  checked: Date;
  details?: Record<string, string | number | boolean>;
}

/**
 * What a delivery may tell and ask the engine while it runs (a backend that
 * follows its job at the device, IPP): lines for the job's log, and whether
 * the job was canceled meanwhile (then the backend cancels it at the device,
 * IPP Cancel-Job). Both never reject.
 */
export interface DeliveryWatch {
  /** A line for the job's log (the device's job states and reasons); resolves once written or dropped. */
  note(text: string, level?: 'info' | 'warning'): Promise<void>;
  /** Whether the job was canceled (or deleted after a cancel) since its hand-off. */
  canceled(): Promise<boolean>;
}

/**
 * One device behind a printer's `connection` URL (`ipp://`, `ipps://`,
 * `socket://host:9100`, `lpr://host/queue`, `file:///dir`).
 */
export interface PrintBackend {
  /** The connection URL, normalized, without credentials (for logs and the printer record). */
  readonly connection: string;
  /** What it talks to, for the confinement rule (`confinement.ts`) to judge before every send and device check. */
  readonly target: PrintTarget;
  /**
   * Hands one job to the device, reading `content` once. It never retries on
   * its own once a byte has left: a failure after that is `uncertain`, and the
   * caller records it. Resolves when the device acknowledged the job; rejects
   * only with `PrintDeliveryError`. `signal` aborts a delivery in progress.
   * `watch` (given by the engine) carries log lines and cancels; backends
   * that cannot follow a job at the device ignore it.
   */
  send(ticket: PrintTicket, content: Readable, signal: AbortSignal, watch?: DeliveryWatch): Promise<Acknowledgement>;
  /** Probes the device (IPP Get-Printer-Attributes, TCP connect, directory writable); never throws. */
  checkPhysical(signal: AbortSignal): Promise<PhysicalState>;
}

/**
 * What a backend gets when it is built: a logger, the network timeouts
 * from configuration (`printDispatch.connectTimeoutMs` and
 * `printDispatch.idleTimeoutMs`, `printBackendTimeouts`); backends that talk
 * to a device over the network (socket, IPP, LPR) honour them), and the
 * confinement rule: network backends open their connections with
 * `confinement.connect`, the directory backend writes where
 * `confinement.directory` says.
 */
export interface PrintBackendContext {
  log: Logger;
  timeouts?: PrintBackendTimeouts;
  confinement: PrintConfinement;
}

export interface PrintBackendTimeouts {
  /** How long a connection may take to open. */
  connectMs: number;
  /** How long a connection may make no progress (no bytes accepted, no answer) before it fails. */
  idleMs: number;
}

/** The backends' timeouts from the configuration's `printDispatch` (every backend built for a delivery or a device check). */
export const printBackendTimeouts = (c: { connectTimeoutMs: number; idleTimeoutMs: number }): PrintBackendTimeouts =>
  ({ connectMs: c.connectTimeoutMs, idleMs: c.idleTimeoutMs });

/** A kind of device, registered once in `print-backends/registry.ts`. */
export interface PrintBackendType {
  readonly name: string;
  /** URL schemes it serves, without `:`. */
  readonly schemes: readonly string[];
  readonly description: string;
  /** Whether a second `send` of the same job id is refused as `duplicate` (the device can tell). */
  readonly detectsDuplicates: boolean;
  /**
   * Checks the URL (400 `INVALID_CONNECTION` naming the problem) and builds a
   * backend; does not touch the device. The registry judges its `target`
   * (400 `CONNECTION_FORBIDDEN`) and wraps it in the confinement rule.
   */
  create(url: URL, ctx: PrintBackendContext): PrintBackend;
}
