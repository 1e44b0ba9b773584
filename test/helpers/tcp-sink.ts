import net from 'node:net';

/** One connection a sink accepted: when it opened and closed, and the bytes it got. */
export interface SinkConnection {
  opened: number;
  /** Set when the client finished sending (half-close or close). */
  ended?: number;
  /** Set once the connection is closed. */
  closed?: number;
  bytes: number;
  chunks: Buffer[];
}

export interface TcpSinkOptions {
  /** `close`: close once the client half-closes (a raw-socket printer); `hold`: keep every connection open, never acknowledge. */
  mode?: 'close' | 'hold';
  /** Keep the bytes (off for benchmarks that only count). */
  keepBytes?: boolean;
  port?: number;
  /** In `close` mode, how long the printer takes to acknowledge a complete job (a slow device); 0 by default. */
  ackDelayMs?: number;
}

/**
 * A raw-socket "printer" on 127.0.0.1 for tests and benchmarks: it records
 * every connection's open and close times (performance.now) and bytes, can go
 * down (stop listening: connections are refused) and come up again on the
 * same port.
 */
export class TcpSink {
  readonly connections: SinkConnection[] = [];
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  /** How the sink answers from now on (a test may switch a holding printer to a normal one). */
  mode: 'close' | 'hold';

  constructor(private readonly opts: TcpSinkOptions = {}) {
    this.port = opts.port ?? 0;
    this.mode = opts.mode ?? 'close';
  }

  static async start(opts: TcpSinkOptions = {}): Promise<TcpSink> {
    const sink = new TcpSink(opts);
    await sink.up();
    return sink;
  }

  get connection(): string {
    return `socket://127.0.0.1:${this.port}`;
  }

  /** Starts listening (again, on the same port once one was assigned). */
  async up(): Promise<void> {
    // half-open allowed: a `hold` printer keeps its side open after the client's end
    const server = net.createServer({ allowHalfOpen: true }, (socket) => this.accept(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and drops open connections: the printer is switched off. */
  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  close = () => this.down();

  /**
   * Acknowledges every held connection whose client finished sending (closes
   * the sink's side, as a raw-socket printer does with a complete job); the
   * sink keeps its mode for new connections.
   */
  release(): void {
    for (const s of this.sockets) if (s.readableEnded) s.end();
  }

  /** Connections whose client sent everything and half-closed, still held open (the job is complete, not yet acknowledged). */
  held(): SinkConnection[] {
    return this.connections.filter((c) => c.ended !== undefined && c.closed === undefined);
  }

  /** Connections that carried bytes and were closed, oldest first: each is one received job. */
  jobs(): SinkConnection[] {
    return this.connections.filter((c) => c.bytes > 0 && c.closed !== undefined);
  }

  received(): Buffer[] {
    return this.jobs().map((c) => Buffer.concat(c.chunks));
  }

  /** The most connections carrying bytes that were open at the same moment. */
  maxConcurrent(): number {
    const events = this.connections.filter((c) => c.bytes > 0).flatMap((c) => [[c.opened, 1], [c.closed ?? Infinity, -1]] as const);
    events.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let max = 0;
    for (const [, d] of events) max = Math.max(max, (open += d));
    return max;
  }

  private accept(socket: net.Socket): void {
    const conn: SinkConnection = { opened: performance.now(), bytes: 0, chunks: [] };
    this.connections.push(conn);
    this.sockets.add(socket);
    socket.on('data', (c: Buffer) => {
      conn.bytes += c.length;
      if (this.opts.keepBytes !== false) conn.chunks.push(c);
    });
    socket.on('error', () => {});
    socket.on('end', () => {
      conn.ended = performance.now();
      // the job is complete: a raw-socket printer answers by closing
      if (this.mode === 'hold') return;
      if (this.opts.ackDelayMs) setTimeout(() => socket.end(), this.opts.ackDelayMs).unref();
      else socket.end();
    });
    socket.on('close', () => {
      conn.closed = performance.now();
      this.sockets.delete(socket);
    });
  }
}
