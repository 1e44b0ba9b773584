import net from 'node:net';

/**
 * A TCP proxy on loopback in front of one server (PostgreSQL, Redis), for
 * outage tests that must not stop the shared server: `cut()` drops every
 * connection through it and refuses new ones (as a server that went away),
 * `restore()` accepts again on the same port.
 */
export class TcpProxy {
  private server?: net.Server;
  private readonly pairs = new Set<net.Socket>();
  port = 0;

  private constructor(private readonly target: { host: string; port: number }) {}

  /** Starts a proxy to `target` (a URL such as postgresql://…@127.0.0.1:5432/db, or host and port). */
  static async start(target: string | { host: string; port: number }): Promise<TcpProxy> {
    const t = typeof target === 'string' ? (() => {
      const u = new URL(target);
      return { host: u.hostname, port: Number(u.port) };
    })() : target;
    if (t.host !== '127.0.0.1' && t.host !== 'localhost' && t.host !== '::1') throw new Error(`TcpProxy is for loopback targets only, not ${t.host}`);
    const proxy = new TcpProxy(t);
    await proxy.restore();
    return proxy;
  }

  /** `url` with its host and port replaced by the proxy's. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  get up(): boolean {
    return this.server !== undefined;
  }

  /** Accepts connections (again, on the same port once one was assigned). */
  async restore(): Promise<void> {
    if (this.server) return;
    const server = net.createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  /** Stops listening and resets every connection through the proxy. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.pairs) s.resetAndDestroy();
    this.pairs.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  close = () => this.cut();

  private accept(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    this.pairs.add(client);
    this.pairs.add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      this.pairs.delete(client);
      this.pairs.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}
