import type { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../../../errors/app-error.js';
import { ConfinementError, type PrintTarget } from '../confinement.js';
import { codeOf, connectFailure } from '../network-errors.js';
import {
  PrintDeliveryError, type Acknowledgement, type DeliveryWatch, type PhysicalState, type PrintBackend, type PrintBackendContext, type PrintBackendType, type PrintTicket,
} from '../print-backend.js';
import { IppClient, IppConnectError, IppExchangeError } from './ipp-client.js';
import {
  all, describeStatus, first, isSuccess, JOB_ABORTED, JOB_CANCELED, JOB_COMPLETED, JOB_STATES, OP, PRINTER_STATES, RETRY_LATER, STATUS, type Attr, type IppResponse,
} from './ipp-message.js';

export const DEFAULT_IPP_PORT = 631;
/** The IPP Everywhere path, for a URL that names none. */
export const DEFAULT_IPP_PATH = '/ipp/print';
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/** How often a job at the device is looked at: from the first value, growing by half, up to the last. */
const FOLLOW_FIRST_MS = 200;
const FOLLOW_MAX_MS = 2000;

const PRINTER_ATTRIBUTES = ['printer-state', 'printer-state-reasons', 'printer-state-message', 'printer-make-and-model', 'document-format-supported'];
const JOB_ATTRIBUTES = ['job-state', 'job-state-reasons', 'job-state-message'];

/**
 * IPP and IPPS printers (`ipp://host[:port]/path`, `ipps://…`; port 631, path
 * `/ipp/print` by default). Every operation is one HTTP POST over a
 * connection the confinement rule opened (`IppClient`).
 *
 * A delivery is one Print-Job (required of every IPP printer, RFC 8011):
 * `document-format` is the job's media type, with `job-name`,
 * `document-name`, `requesting-user-name` and `copies`; the document
 * streams in the same request. Not Create-Job and Send-Document: a worker
 * stopped between the two leaves an empty job that holds the printer until
 * its `multiple-operation-time-out` (ippeveprinter never times it out: a
 * `kill -9` there kept it busy for good); a Print-Job cut short is aborted
 * by the printer and holds nothing. It then follows the job with Get-Job-Attributes until completed
 * (acknowledged), aborted or canceled at the device (`refused`), writing
 * every new job-state and job-state-reasons to the job's log
 * (`DeliveryWatch.note`), and sends Cancel-Job when the job was canceled
 * meanwhile.
 *
 * Outcomes (at most once): nothing of the document left (a refused
 * connection, a printer answering `server-error-busy`,
 * `server-error-service-unavailable`, `-temporary-error` or
 * `-not-accepting-jobs`, a failure before the upload began) is
 * `not-delivered`, and dispatch retries with backoff; another error status
 * (`client-error-document-format-not-supported`, …) is `refused`; an upload
 * cut after document bytes left without an IPP answer is `uncertain`. Once
 * the printer accepted the job, losing sight of it (the printer stops
 * answering, the worker stops) still acknowledges it: the printer has it.
 * The printer assigns job ids, so a second delivery cannot be told apart
 * (`detectsDuplicates: false`).
 */
export class IppBackend implements PrintBackend {
  readonly connection: string;
  readonly target: PrintTarget;
  private readonly client: IppClient;
  private readonly idleMs: number;
  private readonly connectMs: number;

  constructor(scheme: 'ipp' | 'ipps', host: string, port: number, path: string, ctx: PrintBackendContext) {
    this.connection = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
    this.target = { kind: 'network', host, port };
    this.connectMs = ctx.timeouts?.connectMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.idleMs = ctx.timeouts?.idleMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.client = new IppClient({ host, port, path, tls: scheme === 'ipps', connectMs: this.connectMs, idleMs: this.idleMs }, ctx.confinement);
  }

  async send(ticket: PrintTicket, content: Readable, signal: AbortSignal, watch?: DeliveryWatch): Promise<Acknowledgement> {
    if (signal.aborted) {
      content.destroy();
      throw new PrintDeliveryError('not-delivered', 'aborted before sending', { cause: signal.reason });
    }
    const who: Attr[] = [['uri', 'printer-uri', this.connection], ['name', 'requesting-user-name', ticket.user.slice(0, 255) || 'anonymous']];
    const jobName = ticket.name.slice(0, 255) || ticket.jobId;
    const jobAttrs: Attr[] = ticket.copies > 1 ? [['integer', 'copies', ticket.copies]] : [];
    let jobId: number;
    try {
      const doc: Attr[] = [['name', 'job-name', jobName], ['mime', 'document-format', ticket.mimeType], ['name', 'document-name', jobName]];
      const printed = this.answered(await this.client.call(OP.printJob, [...who, ...doc], jobAttrs, signal, content));
      jobId = Number(first(printed, 'job-id'));
    } catch (err) {
      content.destroy();
      throw this.failure(err);
    }
    await watch?.note(`${this.connection} accepted the document as job ${jobId}`);
    return this.follow(jobId, ticket.user, signal, watch);
  }

  async checkPhysical(signal: AbortSignal): Promise<PhysicalState> {
    const checked = new Date();
    try {
      const r = await this.client.call(OP.getPrinterAttributes, [
        ['uri', 'printer-uri', this.connection], ['name', 'requesting-user-name', 'device-check'], ['keyword', 'requested-attributes', PRINTER_ATTRIBUTES],
      ], [], signal);
      if (!isSuccess(r.status)) return { reachable: false, message: `${this.connection} answered Get-Printer-Attributes with ${describeStatus(r)}`, checked };
      const state = PRINTER_STATES[Number(first(r, 'printer-state'))] ?? first(r, 'printer-state');
      const reasons = all(r, 'printer-state-reasons').join(', ');
      const model = first(r, 'printer-make-and-model');
      const stateMessage = first(r, 'printer-state-message');
      return {
        reachable: true,
        message: `${model || 'IPP printer'}: ${state} (${reasons || 'none'})${stateMessage ? `: ${stateMessage}` : ''}`,
        checked,
        details: {
          printerState: state,
          printerStateReasons: reasons,
          ...(stateMessage ? { printerStateMessage: stateMessage } : {}),
          printerMakeAndModel: model,
          documentFormatSupported: all(r, 'document-format-supported').join(', '),
        },
      };
    } catch (err) {
      const cause = err instanceof IppConnectError || err instanceof IppExchangeError ? err.error : err;
      return { reachable: false, message: cause instanceof ConfinementError ? cause.message : `${this.connection} did not answer: ${codeOf(cause)}`, checked };
    }
  }

  /** The response when it is a success; else thrown, to be classified by `failure`. */
  private answered(r: IppResponse): IppResponse {
    if (!isSuccess(r.status)) throw new IppStatusError(r);
    return r;
  }

  /** How a delivery that did not get its job accepted ends (see the class comment). */
  private failure(err: unknown): PrintDeliveryError {
    if (err instanceof PrintDeliveryError) return err;
    if (err instanceof IppConnectError) return connectFailure(err.error, this.connection);
    if (err instanceof IppStatusError) {
      const said = `${this.connection} answered ${describeStatus(err.response)}`;
      if (RETRY_LATER.has(err.response.status)) return new PrintDeliveryError('not-delivered', `${said}; nothing was printed`, { cause: err });
      return new PrintDeliveryError('refused', said, { cause: err });
    }
    if (err instanceof IppExchangeError) {
      const how = err.httpStatus !== undefined && err.httpStatus !== 200 ? `HTTP ${err.httpStatus}` : codeOf(err.error);
      if (err.documentBytes === 0) return new PrintDeliveryError('not-delivered', `nothing of the document sent to ${this.connection}: ${how}`, { cause: err });
      return new PrintDeliveryError('uncertain', `${this.connection} gave no answer after ${err.documentBytes} bytes of the document left: ${how}`, { cause: err });
    }
    return new PrintDeliveryError('uncertain', `${this.connection}: ${codeOf(err)}`, { cause: err });
  }

  /**
   * Follows an accepted job until the device finishes it: new states and
   * reasons go to the job's log; a cancel of the job is sent on as
   * Cancel-Job. The printer has the job from here on, so a follow cut short
   * (the printer stops answering for the idle time, the run is aborted)
   * still acknowledges it.
   */
  private async follow(jobId: number, user: string, signal: AbortSignal, watch?: DeliveryWatch): Promise<Acknowledgement> {
    const accepted = (why: string): Acknowledgement => ({ deviceJobId: String(jobId), message: `${this.connection} accepted the job as job ${jobId}; ${why}` });
    let last = '';
    let wait = FOLLOW_FIRST_MS;
    let silentSince: number | undefined;
    for (;;) {
      if (signal.aborted) return accepted('not followed to its end (the delivery was stopped)');
      if (watch && (await watch.canceled())) {
        const said = await this.cancelAtDevice(jobId, user);
        await watch.note(`canceled: Cancel-Job for job ${jobId} sent to ${this.connection}: ${said}`, 'warning');
        throw new PrintDeliveryError('refused', `canceled while at the device (job ${jobId}; Cancel-Job: ${said})`);
      }
      let r: IppResponse | undefined;
      try {
        r = await this.client.call(OP.getJobAttributes, [
          ['uri', 'printer-uri', this.connection], ['integer', 'job-id', jobId], ['name', 'requesting-user-name', user || 'anonymous'],
          ['keyword', 'requested-attributes', JOB_ATTRIBUTES],
        ], [], signal);
      } catch (err) {
        if (signal.aborted) continue;
        silentSince ??= Date.now();
        if (Date.now() - silentSince >= this.idleMs) {
          const cause = err instanceof IppConnectError || err instanceof IppExchangeError ? err.error : err;
          return accepted(`the printer stopped answering while the job was followed (${codeOf(cause)})`);
        }
      }
      if (r) {
        silentSince = undefined;
        if (r.status === STATUS.clientErrorNotFound) return accepted('the printer no longer knows the job');
        if (isSuccess(r.status)) {
          const state = Number(first(r, 'job-state'));
          const reasons = all(r, 'job-state-reasons').join(', ') || 'none';
          const message = first(r, 'job-state-message');
          const line = `job ${jobId} at the device: ${JOB_STATES[state] ?? state} (${reasons})${message ? `: ${message}` : ''}`;
          if (line !== last) {
            await watch?.note(line, state === JOB_ABORTED ? 'warning' : 'info');
            last = line;
          }
          if (state === JOB_COMPLETED) return { deviceJobId: String(jobId), message: `${this.connection} printed job ${jobId}: completed (${reasons})` };
          if (state === JOB_ABORTED) throw new PrintDeliveryError('refused', `${this.connection} aborted job ${jobId} (${reasons})${message ? `: ${message}` : ''}`);
          if (state === JOB_CANCELED) throw new PrintDeliveryError('refused', `job ${jobId} was canceled at ${this.connection} (${reasons})`);
        }
      }
      await sleep(wait, undefined, { signal }).catch(() => undefined);
      wait = Math.min(FOLLOW_MAX_MS, Math.round(wait * 1.5));
    }
  }

  /** Cancel-Job, best effort (its own time limit): what the printer said, for the log. */
  private async cancelAtDevice(jobId: number, user: string): Promise<string> {
    try {
      const r = await this.client.call(OP.cancelJob, [
        ['uri', 'printer-uri', this.connection], ['integer', 'job-id', jobId], ['name', 'requesting-user-name', user || 'anonymous'],
      ], [], AbortSignal.timeout(this.connectMs + this.idleMs));
      return describeStatus(r);
    } catch (err) {
      const cause = err instanceof IppConnectError || err instanceof IppExchangeError ? err.error : err;
      return `not sent (${codeOf(cause)})`;
    }
  }
}

/** A printer's answer that is not a success. */
class IppStatusError extends Error {
  override readonly name = 'IppStatusError';
  constructor(readonly response: IppResponse) {
    super(describeStatus(response));
  }
}

export const ippBackendType: PrintBackendType = {
  name: 'ipp',
  schemes: ['ipp', 'ipps'],
  description: 'IPP and IPPS printers: ipp://host[:port]/path, ipps://host[:port]/path (port 631, path /ipp/print by default)',
  detectsDuplicates: false,
  create(url, ctx) {
    const scheme = url.protocol === 'ipps:' ? 'ipps' : 'ipp';
    if (!url.hostname) throw new AppError('INVALID_CONNECTION', `an ${scheme}:// connection names a host: ${scheme}://host[:port]/ipp/print`);
    if (url.search || url.hash || url.username || url.password) {
      throw new AppError('INVALID_CONNECTION', `an ${scheme}:// connection is only ${scheme}://host[:port]/path (no credentials, query or fragment)`);
    }
    const port = url.port === '' ? DEFAULT_IPP_PORT : Number(url.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new AppError('INVALID_CONNECTION', `port ${url.port} is not a TCP port`);
    const path = url.pathname && url.pathname !== '/' ? url.pathname : DEFAULT_IPP_PATH;
    return new IppBackend(scheme, url.hostname.replace(/^\[(.*)\]$/, '$1'), port, path, ctx);
  },
};
