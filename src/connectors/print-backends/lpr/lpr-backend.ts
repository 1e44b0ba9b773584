import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import type { Socket } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AppError } from '../../../errors/app-error.js';
import { ConfinementError, type PrintConfinement, type PrintTarget } from '../confinement.js';
import { codeOf, connectFailure, IdleTimeout } from '../network-errors.js';
import {
  PrintDeliveryError, type Acknowledgement, type PhysicalState, type PrintBackend, type PrintBackendContext, type PrintBackendType, type PrintTicket,
} from '../print-backend.js';
import { AckReader, LprRefusal } from './ack-reader.js';

export const DEFAULT_LPR_PORT = 515;
const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;
const DEFAULT_IDLE_TIMEOUT_MS = 60_000;

/** Queue names as LPD daemons take them: no spaces or control characters. */
const QUEUE = /^[A-Za-z0-9._@+-]{1,100}$/;

/** A control-file value: printable, one line, at most `max` characters (RFC 1179 section 7). */
const field = (s: string, max: number) => s.replace(/[^\x20-\x7e]/g, '_').slice(0, max) || '_';

/** This host's name as the control file's `H` line and file names carry it (RFC 1179: up to 31 characters). */
const localHost = () => field(os.hostname().replace(/[^A-Za-z0-9.-]/g, ''), 31);

/**
 * LPR/LPD printing (RFC 1179), `lpr://host[:port]/queue` (port 515): one
 * connection per job through the confinement rule, "receive a printer job"
 * (02), the data file (subcommand 03: its byte count, the bytes streamed, a
 * zero byte) and then the control file (subcommand 02: host, user, job name,
 * one `l` line per copy, unlink), each answered by the daemon with a zero
 * byte. The control file goes last: a daemon prints nothing until it has
 * it, and throws away a job whose connection closed before.
 *
 * RFC 1179 names source ports 721-731; those need root, and most daemons
 * (printers, cups-lpd, LPRng) do not ask for them, so any source port is
 * used (a BSD lpd that insists refuses the connection).
 *
 * The count comes before the bytes: without `ticket.size` the document is
 * first spooled to a temporary file to count it. Outcomes: a failure before
 * the first byte of the document left is `not-delivered` (a daemon that
 * says no to the queue or a file is `refused`); once document bytes left,
 * a failure without the control file's acknowledgement is `uncertain`.
 * There is no job id the daemon could match (`detectsDuplicates: false`).
 */
export class LprBackend implements PrintBackend {
  readonly connection: string;
  readonly target: PrintTarget;
  private readonly confinement: PrintConfinement;
  private readonly connectMs: number;
  private readonly idleMs: number;

  constructor(private readonly host: string, private readonly port: number, private readonly queue: string, ctx: PrintBackendContext) {
    this.connection = `lpr://${host.includes(':') ? `[${host}]` : host}:${port}/${queue}`;
    this.target = { kind: 'network', host, port };
    this.confinement = ctx.confinement;
    this.connectMs = ctx.timeouts?.connectMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
    this.idleMs = ctx.timeouts?.idleMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  }

  async send(ticket: PrintTicket, content: Readable, signal: AbortSignal): Promise<Acknowledgement> {
    if (signal.aborted) {
      content.destroy();
      throw new PrintDeliveryError('not-delivered', 'aborted before sending', { cause: signal.reason });
    }
    if (ticket.size !== undefined) return this.deliver(ticket, ticket.size, content, signal);
    // the count goes before the bytes: an unknown size is counted on disk first, never in memory
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-lpr-'));
    try {
      const file = path.join(dir, 'document');
      try {
        await pipeline(content, createWriteStream(file), { signal });
      } catch (err) {
        throw new PrintDeliveryError('not-delivered', `the document could not be read (${codeOf(err)}); nothing sent`, { cause: err });
      }
      return await this.deliver(ticket, (await stat(file)).size, createReadStream(file), signal);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async deliver(ticket: PrintTicket, size: number, content: Readable, signal: AbortSignal): Promise<Acknowledgement> {
    let socket: Socket;
    try {
      socket = await this.confinement.connect(this.host, this.port, { signal, timeoutMs: this.connectMs });
    } catch (err) {
      content.destroy();
      throw connectFailure(err, this.connection);
    }
    const acks = new AckReader(socket, this.idleMs, () => new IdleTimeout(`no progress for ${this.idleMs} ms`));
    const onAbort = () => socket.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const host = localHost();
    const number = String(parseInt(createHash('sha256').update(ticket.jobId).digest('hex').slice(0, 8), 16) % 1000).padStart(3, '0');
    const dataFile = `dfA${number}${host}`;
    let sent = 0;
    try {
      await acks.command(`\x02${this.queue}\n`, 'receive a printer job');
      await acks.command(`\x03${size} ${dataFile}\n`, 'the data file');
      for await (const chunk of content as AsyncIterable<Buffer>) {
        if (sent + chunk.length > size) throw new Error(`the document is longer than the ${size} bytes announced`);
        sent += chunk.length;
        await acks.write(chunk);
      }
      if (sent !== size) throw new Error(`the document ended after ${sent} of the ${size} bytes announced`);
      await acks.command('\x00', 'the data file');
      const name = field(ticket.name, 131);
      const control = [
        `H${host}`, `P${field(ticket.user, 31)}`, `J${field(ticket.name, 99)}`, `N${name}`,
        ...Array.from({ length: Math.max(1, ticket.copies) }, () => `l${dataFile}`), `U${dataFile}`, '',
      ].join('\n');
      await acks.command(`\x02${Buffer.byteLength(control)} cfA${number}${host}\n`, 'the control file');
      await acks.command(Buffer.concat([Buffer.from(control), Buffer.alloc(1)]), 'the control file');
      socket.end();
      return { message: `${sent} bytes queued on ${this.connection} (${ticket.copies > 1 ? `${ticket.copies} copies, ` : ''}control file acknowledged)` };
    } catch (err) {
      content.destroy();
      if (err instanceof LprRefusal) {
        // the daemon said no before it had a control file: it prints nothing of this job
        throw new PrintDeliveryError('refused', `${this.connection} refused ${err.what} (answer ${err.code})`, { cause: err });
      }
      const reason = codeOf(err);
      if (sent === 0) throw new PrintDeliveryError('not-delivered', `nothing of the document sent to ${this.connection}: ${reason}`, { cause: err });
      throw new PrintDeliveryError('uncertain', `${this.connection} failed after ${sent} bytes of the document left: ${reason}`, { cause: err });
    } finally {
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
    }
  }

  async checkPhysical(signal: AbortSignal): Promise<PhysicalState> {
    const checked = new Date();
    const started = performance.now();
    try {
      const socket = await this.confinement.connect(this.host, this.port, { signal, timeoutMs: this.connectMs });
      socket.on('error', () => {});
      socket.destroy();
      return { reachable: true, message: `LPD at ${this.host}:${this.port} accepts connections (queue ${this.queue})`, checked, details: { connectMs: Math.round(performance.now() - started) } };
    } catch (err) {
      return { reachable: false, message: err instanceof ConfinementError ? err.message : `TCP connect to ${this.host}:${this.port} failed: ${codeOf(err)}`, checked };
    }
  }
}

export const lprBackendType: PrintBackendType = {
  name: 'lpr',
  schemes: ['lpr'],
  description: 'LPR/LPD printing (RFC 1179): lpr://host[:port]/queue, port 515 by default',
  detectsDuplicates: false,
  create(url, ctx) {
    if (!url.hostname) throw new AppError('INVALID_CONNECTION', 'an lpr:// connection names a host and a queue: lpr://host[:port]/queue');
    if (url.search || url.hash || url.username || url.password) throw new AppError('INVALID_CONNECTION', 'an lpr:// connection is only lpr://host[:port]/queue');
    let queue = '';
    try {
      queue = decodeURIComponent(url.pathname.replace(/^\//, ''));
    } catch {
      // a bad escape is a name the test below refuses
    }
    if (!QUEUE.test(queue)) throw new AppError('INVALID_CONNECTION', 'an lpr:// connection names its queue (letters, digits, . _ @ + -): lpr://host[:port]/queue');
    const port = url.port === '' ? DEFAULT_LPR_PORT : Number(url.port);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new AppError('INVALID_CONNECTION', `port ${url.port} is not a TCP port`);
    return new LprBackend(url.hostname.replace(/^\[(.*)\]$/, '$1'), port, queue, ctx);
  },
};
