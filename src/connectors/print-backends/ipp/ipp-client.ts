import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { PrintConfinement } from '../confinement.js';
import { IdleTimeout } from '../network-errors.js';
import { decodeResponse, encodeRequest, type Attr, type IppResponse } from './ipp-message.js';

/** Where an IPP printer is and how long its connections may take. */
export interface IppEndpoint {
  host: string;
  port: number;
  /** The HTTP path (`/ipp/print`). */
  path: string;
  tls: boolean;
  connectMs: number;
  idleMs: number;
}

/** The connection could not be opened: nothing was sent. */
export class IppConnectError extends Error {
  override readonly name = 'IppConnectError';
  constructor(readonly error: unknown) {
    super('connect failed', { cause: error });
  }
}

/**
 * The connection was open and no IPP response came (a reset, a timeout, an
 * HTTP error status, a source that failed, an abort). `documentBytes` says
 * how much of the document was handed to the connection: once it is not 0,
 * the printer may have (part of) it.
 */
export class IppExchangeError extends Error {
  override readonly name = 'IppExchangeError';
  constructor(readonly error: unknown, readonly documentBytes: number, readonly httpStatus?: number) {
    super('no IPP response', { cause: error });
  }
}

class HttpStatusError extends Error {
  override readonly name = 'HttpStatusError';
  constructor(readonly status: number) {
    super(`HTTP ${status}`);
  }
}

/** An IPP response is a few attributes; anything larger is not one this backend asked for. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

/**
 * IPP over HTTP/1.1 (RFC 8010 section 4), one operation per connection, the
 * connection opened by the confinement rule (`PrintConfinement.connect`, TLS
 * for IPPS) and the HTTP request sent over it alone. A document is streamed
 * after the message with chunked transfer coding and back-pressure, never
 * held whole; a printer that answers before the document is complete (busy,
 * a format it refuses) stops the upload there.
 */
export class IppClient {
  private requestId = 0;

  constructor(private readonly at: IppEndpoint, private readonly confinement: PrintConfinement) {}

  async call(operation: number, opAttrs: readonly Attr[], jobAttrs: readonly Attr[], signal: AbortSignal, document?: Readable): Promise<IppResponse> {
    const { host, port } = this.at;
    let socket;
    try {
      socket = await this.confinement.connect(host, port, { signal, timeoutMs: this.at.connectMs, ...(this.at.tls ? { tls: {} } : {}) });
    } catch (err) {
      throw new IppConnectError(err);
    }
    const message = encodeRequest(operation, ++this.requestId, opAttrs, jobAttrs);
    const req = PrintConfinement.httpRequest(socket, {
      method: 'POST',
      path: this.at.path,
      headers: {
        host: `${host.includes(':') ? `[${host}]` : host}:${port}`,
        'content-type': 'application/ipp',
        // without a length the body goes chunked (a document's size need not be known)
        ...(document ? {} : { 'content-length': String(message.length) }),
      },
    });
    let documentBytes = 0;
    let httpStatus: number | undefined;
    let answered = false;
    // every error of the request has a listener until the end (a destroy may emit one late)
    req.on('error', () => {});
    const response = new Promise<IppResponse>((resolve, reject) => {
      req.once('error', reject);
      req.once('response', (res) => {
        httpStatus = res.statusCode;
        if (res.statusCode !== 200) {
          res.resume();
          reject(new HttpStatusError(res.statusCode ?? 0));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_RESPONSE_BYTES) req.destroy(new Error(`the response exceeds ${MAX_RESPONSE_BYTES} bytes`));
          else chunks.push(c);
        });
        res.once('error', reject);
        res.once('end', () => {
          try {
            resolve(decodeResponse(Buffer.concat(chunks)));
          } catch (err) {
            reject(err as Error);
          }
        });
      });
    });
    response.then(() => (answered = true), () => {});
    req.setTimeout(this.at.idleMs, () => req.destroy(new IdleTimeout(`no progress for ${this.at.idleMs} ms`)));
    const onAbort = () => req.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      signal.throwIfAborted();
      req.write(message);
      if (document) {
        for await (const chunk of document as AsyncIterable<Buffer>) {
          // the printer answered before the whole document (busy, refused): it took none of it
          if (answered) break;
          documentBytes += chunk.length;
          if (!req.write(chunk)) {
            const drained = once(req, 'drain');
            drained.catch(() => {});
            await Promise.race([drained, response]);
          }
        }
      }
      if (!answered) req.end();
      return await response;
    } catch (err) {
      req.destroy();
      throw new IppExchangeError(err, documentBytes, httpStatus);
    } finally {
      signal.removeEventListener('abort', onAbort);
      document?.destroy();
      socket.destroy();
    }
  }
}
