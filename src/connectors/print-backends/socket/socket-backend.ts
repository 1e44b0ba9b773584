import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import { AppError } from '../../../errors/app-error.js';
import { ConfinementError, type PrintConfinement, type PrintTarget } from '../confinement.js';
import { codeOf, connectFailure, IdleTimeout } from '../network-errors.js';
import { watchProgress } from '../progress-timeout.js';
import {
  PrintDeliveryError, type Acknowledgement, type PhysicalState, type PrintBackend, type PrintBackendContext, type PrintBackendType, type PrintTicket,
} from '../print-backend.js';

export const DEFAULT_SOCKET_PORT = 9100;
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
export const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/**
 * Raw TCP printing (`socket://host:port`, port 9100 by default, the
 * "AppSocket"/"JetDirect" protocol): connect, stream the bytes, half-close,
 * and wait for the device to close its side, which is how such a device says
 * it has the job. There is no job id on the wire, so the device cannot tell a
 * second delivery (`detectsDuplicates: false`): dispatch's hand-off mark is
 * what keeps a job from being sent twice.
 *
 * Outcomes: a failure before the first byte was handed to the connection is
 * `not-delivered` (refused connection, unreachable host, timeout, reset,
 * abort), and dispatch retries later; once bytes left, any failure is
 * `uncertain` (the device may print part or all of it). Copies are the
 * document's business on a raw socket (the device prints what it gets once).
 */
export class SocketBackend implements PrintBackend {
  readonly connection: string;
  private readonly connectTimeoutMs: number;
  private readonly idleTimeoutMs: number;

  readonly target: PrintTarget;
  private readonly confinement: PrintConfinement;

  constructor(private readonly host: string, private readonly port: number, ctx: PrintBackendContext) {
    this.connection = `socket://${host.includes(':') ? `[${host}]` : host}:${port}`;
    this.target = { kind: 'network', host, port };
    this.confinement = ctx.confinement;
    this.connectTimeoutMs = ctx.timeouts?.connectMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.idleTimeoutMs = ctx.timeouts?.idleMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  async send(ticket: PrintTicket, content: Readable, signal: AbortSignal): Promise<Acknowledgement> {
    if (signal.aborted) {
      content.destroy();
      throw new PrintDeliveryError('not-delivered', 'aborted before sending', { cause: signal.reason });
    }
    let socket: Socket;
    try {
      socket = await this.connect(signal);
    } catch (err) {
      content.destroy();
      throw connectFailure(err, this.connection);
    }
    // from here on, every error of the socket has a listener until it is destroyed
    let failure: unknown;
    let onIdle = () => {};
    const failed = new Promise<never>((_, reject) => {
      socket.on('error', (err) => {
        failure ??= err;
        reject(err);
      });
      onIdle = () => {
        failure ??= new IdleTimeout(`no progress for ${this.idleTimeoutMs} ms`);
        reject(failure as Error);
        socket.destroy();
      };
      const onAbort = () => {
        failure ??= signal.reason ?? new Error('aborted');
        reject(failure as Error);
        socket.destroy();
      };
      signal.addEventListener('abort', onAbort, { once: true });
      socket.once('close', () => {
        signal.removeEventListener('abort', onAbort);
        reject(failure ?? new Error('the device closed the connection before the job was sent'));
      });
    });
    failed.catch(() => {});
    // idle means no progress (a piece of the job taken, anything from the device), not socket silence
    const watch = watchProgress(socket, this.idleTimeoutMs, () => onIdle());
    // back-channel data (status, PJL answers) is read and dropped, so the device's end is seen
    socket.resume();
    let sent = 0;
    try {
      for await (const chunk of content as AsyncIterable<Buffer>) {
        if (failure !== undefined) throw failure;
        sent += chunk.length;
        if (!watch.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), failed]);
      }
      if (failure !== undefined) throw failure;
      // half-close: the device has the whole job and says so by closing its side
      const closed = new Promise<void>((resolve) => socket.once('end', () => resolve()));
      socket.end();
      await Promise.race([closed, failed]);
    } catch (err) {
      socket.destroy();
      content.destroy();
      const reason = `${codeOf(err)}`;
      if (socket.bytesWritten === 0 && sent === 0) {
        throw new PrintDeliveryError('not-delivered', `nothing sent to ${this.connection}: ${reason}`, { cause: err });
      }
      throw new PrintDeliveryError('uncertain', `${this.connection} failed after ${socket.bytesWritten} of the job's bytes left: ${reason}`, { cause: err });
    }
    socket.destroy();
    return { message: `${sent} bytes sent to ${this.connection}; the device closed the connection` };
  }

  async checkPhysical(signal: AbortSignal): Promise<PhysicalState> {
    const checked = new Date();
    const started = performance.now();
    try {
      const socket = await this.connect(signal);
      socket.on('error', () => {});
      socket.end();
      socket.destroy();
      return { reachable: true, message: `TCP connect to ${this.host}:${this.port} succeeded`, checked, details: { connectMs: Math.round(performance.now() - started) } };
    } catch (err) {
      return { reachable: false, message: err instanceof ConfinementError ? err.message : `TCP connect to ${this.host}:${this.port} failed: ${codeOf(err)}`, checked };
    }
  }

  /** A connected socket through the confinement rule, or the connect error (a timeout is `ETIMEDOUT`, an abort the signal's reason). */
  private connect(signal: AbortSignal): Promise<Socket> {
    return this.confinement.connect(this.host, this.port, { signal, timeoutMs: this.connectTimeoutMs });
  }

}

export const socketBackendType: PrintBackendType = {
  name: 'socket',
  schemes: ['socket'],
  description: 'Raw TCP printing (AppSocket/JetDirect): socket://host:port, port 9100 by default',
  detectsDuplicates: false,
  create(url, ctx) {
    if (!url.hostname) throw new AppError('INVALID_CONNECTION', 'a socket:// connection names a host: socket://host:9100');
    if ((url.pathname && url.pathname !== '/') || url.search || url.hash || url.username || url.password) {
      throw new AppError('INVALID_CONNECTION', 'a socket:// connection is only socket://host[:port]');
    }
    const port = url.port === '' ? DEFAULT_SOCKET_PORT : Number(url.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new AppError('INVALID_CONNECTION', `port ${url.port} is not a TCP port`);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    return new SocketBackend(host, port, ctx);
  },
};
