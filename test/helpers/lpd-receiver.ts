import net from 'node:net';

/** One "receive a printer job" conversation as the receiver saw it. */
export interface LpdJob {
  queue: string;
  /** The control file's text, once received and acknowledged. */
  control?: string;
  /** Data files by name, each once received whole and acknowledged. */
  files: Map<string, Buffer>;
  /** Set once the control file's acknowledgement was due (with `ackDelayMs`, a while after `control`): sent, unless the client was gone. */
  acknowledged?: boolean;
  /** The source port the client connected from. */
  sourcePort: number;
}

export interface LpdReceiverOptions {
  /** Queues it accepts jobs for (others are answered with 1); default: any. */
  queues?: readonly string[];
  /** Closes the connection once this many data bytes arrived, acknowledging nothing more (a daemon that dies mid-job). */
  dieAfterBytes?: number;
  /** How long the daemon takes to acknowledge a complete job (the control file's zero byte): a slow device; 0 by default. */
  ackDelayMs?: number;
}

/**
 * A small LPD (RFC 1179) on 127.0.0.1 for tests: it takes "receive a
 * printer job" (02) with its subcommands (01 abort, 02 control file, 03 data
 * file), acknowledges each with a zero byte, and records what arrived. A job
 * counts as received (`received`) once its control file was acknowledged, as
 * a daemon prints it only then. It can go down and come up on the same port.
 */
export class LpdReceiver {
  readonly jobs: LpdJob[] = [];
  private server?: net.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;

  constructor(private readonly opts: LpdReceiverOptions = {}) {}

  static async start(opts: LpdReceiverOptions = {}): Promise<LpdReceiver> {
    const r = new LpdReceiver(opts);
    await r.up();
    return r;
  }

  connectionFor(queue = 'raw'): string {
    return `lpr://127.0.0.1:${this.port}/${queue}`;
  }

  async up(): Promise<void> {
    const server = net.createServer((s) => this.accept(s));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  close = () => this.down();

  /** Jobs whose control file arrived whole and whose acknowledgement is not sent yet (with `ackDelayMs`). */
  held(): LpdJob[] {
    return this.jobs.filter((j) => j.control !== undefined && !j.acknowledged);
  }

  /** Jobs whose control file arrived: their data files' bytes, in file name order. */
  received(): Buffer[] {
    return this.jobs.filter((j) => j.control !== undefined).map((j) => Buffer.concat([...j.files.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, b]) => b)));
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => this.sockets.delete(socket));
    let buf = Buffer.alloc(0);
    let job: LpdJob | undefined;
    // a file being received: its kind, name, and how many bytes (plus the trailing zero) are still due
    let file: { kind: 2 | 3; name: string; due: number; parts: Buffer[] } | undefined;
    let dataBytes = 0;
    const ack = (b = 0) => socket.write(Buffer.from([b]));
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      for (;;) {
        if (file) {
          const take = Math.min(file.due, buf.length);
          if (take === 0) return;
          file.parts.push(buf.subarray(0, take));
          buf = buf.subarray(take);
          file.due -= take;
          if (file.kind === 3) {
            dataBytes += take;
            if (this.opts.dieAfterBytes !== undefined && dataBytes >= this.opts.dieAfterBytes) {
              socket.destroy();
              return;
            }
          }
          if (file.due > 0) return;
          const all = Buffer.concat(file.parts);
          const { kind, name } = file;
          // the last byte is the zero that ends a file
          const content = all.subarray(0, all.length - 1);
          file = undefined;
          if (kind === 2) {
            const done = job!;
            done.control = content.toString('latin1');
            const acknowledge = () => {
              if (!socket.destroyed) ack();
              done.acknowledged = true;
            };
            if (this.opts.ackDelayMs) setTimeout(acknowledge, this.opts.ackDelayMs).unref();
            else acknowledge();
            continue;
          }
          job!.files.set(name, content);
          ack();
          continue;
        }
        const nl = buf.indexOf(0x0a);
        if (nl < 0) return;
        const line = buf.subarray(0, nl);
        buf = buf.subarray(nl + 1);
        const code = line[0];
        const rest = line.subarray(1).toString('latin1');
        if (!job) {
          if (code !== 0x02) {
            ack(1);
            socket.end();
            return;
          }
          if (this.opts.queues && !this.opts.queues.includes(rest)) {
            ack(1);
            socket.end();
            return;
          }
          job = { queue: rest, files: new Map(), sourcePort: socket.remotePort ?? 0 };
          this.jobs.push(job);
          ack();
          continue;
        }
        if (code === 0x01) {
          job.files.clear();
          job.control = undefined;
          ack();
          continue;
        }
        const m = /^(\d+) (\S+)$/.exec(rest);
        if ((code !== 0x02 && code !== 0x03) || !m) {
          ack(1);
          continue;
        }
        file = { kind: code, name: m[2]!, due: Number(m[1]) + 1, parts: [] };
        ack();
      }
    });
  }
}
