import http from 'node:http';
import { checkContract } from './contract.js';
import { eventually } from './runtime.js';

/** One event as a client parsed it off the wire. */
export interface SseEvent {
  id?: string;
  event: string;
  data: string;
}

/**
 * A server-sent-events client on a raw HTTP request: it parses the stream as
 * a browser's EventSource would (fields, blank line ends an event, comments)
 * and keeps everything it saw. `paused` opens it without ever reading (a
 * slow client: the bytes pile up in the kernel and then on the server).
 */
export class SseClient {
  readonly events: SseEvent[] = [];
  comments = 0;
  /** Bytes received. */
  bytes = 0;
  status = 0;
  headers: http.IncomingHttpHeaders = {};
  /** Set once the server ended or cut the stream. */
  closed = false;
  private req?: http.ClientRequest;
  private res?: http.IncomingMessage;
  private buffer = '';
  private current: Partial<SseEvent> & { data?: string } = {};

  private constructor(private readonly url: string) {}

  /** Opens `GET url` and resolves once the response head is in (checked against the OpenAPI document). */
  static async open(url: string, token: string, opts: { lastEventId?: string; paused?: boolean } = {}): Promise<SseClient> {
    const c = new SseClient(url);
    await new Promise<void>((resolve, reject) => {
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'text/event-stream' };
      if (opts.lastEventId !== undefined) headers['last-event-id'] = opts.lastEventId;
      const req = http.get(url, { headers }, (res) => {
        c.res = res;
        c.status = res.statusCode ?? 0;
        c.headers = res.headers;
        checkContract('GET', new URL(url).pathname, {
          status: c.status, headers: new Headers(res.headers as Record<string, string>), contentType: String(res.headers['content-type'] ?? ''), body: undefined,
        });
        res.on('close', () => (c.closed = true));
        res.on('error', () => (c.closed = true));
        if (opts.paused) res.pause();
        else res.on('data', (chunk: Buffer) => c.feed(chunk.toString('utf8')));
        resolve();
      });
      req.on('error', (err) => {
        c.closed = true;
        reject(err);
      });
      c.req = req;
    });
    return c;
  }

  /** Starts reading a client opened `paused` (it then sees whether the server cut it). */
  resume(): void {
    this.res?.on('data', (chunk: Buffer) => this.feed(chunk.toString('utf8')));
    this.res?.resume();
  }

  private feed(text: string): void {
    this.bytes += Buffer.byteLength(text);
    this.buffer += text;
    let nl: number;
    while ((nl = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, nl).replace(/\r$/, '');
      this.buffer = this.buffer.slice(nl + 1);
      if (line === '') {
        if (this.current.data !== undefined) this.events.push({ id: this.current.id, event: this.current.event ?? 'message', data: this.current.data });
        this.current = {};
      } else if (line.startsWith(':')) {
        this.comments++;
      } else {
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'data') this.current.data = this.current.data === undefined ? value : `${this.current.data}\n${value}`;
        else if (field === 'id') this.current.id = value;
        else if (field === 'event') this.current.event = value;
      }
    }
  }

  /** The events of these types (all but heartbeats when none given). */
  of(...types: string[]): SseEvent[] {
    return types.length === 0 ? this.events : this.events.filter((e) => types.includes(e.event));
  }

  /** The last id seen. */
  get lastId(): string | undefined {
    for (let i = this.events.length - 1; i >= 0; i--) if (this.events[i]!.id !== undefined) return this.events[i]!.id;
    return undefined;
  }

  /** Resolves with the first event matching `pred` (bounded). */
  waitFor(pred: (e: SseEvent) => boolean, timeoutMs = 20_000): Promise<SseEvent> {
    return eventually(async () => this.events.find(pred), timeoutMs, 20);
  }

  close(): void {
    this.req?.destroy();
    this.res?.destroy();
    this.closed = true;
  }

  toString(): string {
    return `SseClient(${this.url})`;
  }
}

/** The JSON data of an event. */
export const dataOf = (e: SseEvent): Record<string, unknown> => JSON.parse(e.data) as Record<string, unknown>;
