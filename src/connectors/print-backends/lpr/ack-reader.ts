import type { Socket } from 'node:net';
import { watchProgress, type ProgressWatch } from '../progress-timeout.js';

/** The daemon answered a command or file with a non-zero byte: it did not take it. */
export class LprRefusal extends Error {
  override readonly name = 'LprRefusal';
  constructor(readonly what: string, readonly code: number) {
    super(`${what} refused (answer ${code})`);
  }
}

/**
 * The client side of an LPD conversation on one socket: writes with
 * back-pressure, and reads the daemon's one-byte acknowledgements in order.
 * Every error, idle timeout (no progress) or close of the socket fails what waits (an
 * acknowledgement already received is still read first), and nothing the
 * socket emits is left without a listener.
 */
export class AckReader {
  private readonly received: number[] = [];
  private waiter?: { resolve: (b: number) => void; reject: (e: Error) => void };
  private failure?: Error;
  private readonly failed: Promise<never>;
  private rejectFailed!: (e: Error) => void;

  private readonly watch: ProgressWatch;

  /** `idleMs`: how long nothing may progress (see `watchProgress`) before `timeout()` fails what waits. */
  constructor(private readonly socket: Socket, idleMs: number, timeout: () => Error) {
    this.failed = new Promise<never>((_, reject) => (this.rejectFailed = reject));
    this.failed.catch(() => {});
    socket.on('data', (c: Buffer) => {
      for (const b of c) this.received.push(b);
      this.deliver();
    });
    socket.on('error', (e) => this.fail(e));
    this.watch = watchProgress(socket, idleMs, () => {
      this.fail(timeout());
      socket.destroy();
    });
    socket.on('end', () => this.fail(new Error('the daemon closed the connection')));
    socket.on('close', () => this.fail(new Error('the connection closed')));
  }

  /** Writes, waiting for the socket to drain when its buffer is full. */
  async write(data: Buffer | string): Promise<void> {
    if (this.failure) throw this.failure;
    if (!this.watch.write(data)) {
      await Promise.race([new Promise((r) => this.socket.once('drain', r)), this.failed]);
    }
  }

  /** Writes a command (or a file's last part) and waits for its acknowledgement: `LprRefusal` unless it is 0. */
  async command(data: Buffer | string, what: string): Promise<void> {
    await this.write(data);
    const b = await this.next();
    if (b !== 0) throw new LprRefusal(what, b);
  }

  private next(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.deliver();
    });
  }

  private deliver(): void {
    const w = this.waiter;
    if (!w) return;
    if (this.received.length > 0) {
      this.waiter = undefined;
      w.resolve(this.received.shift()!);
    } else if (this.failure) {
      this.waiter = undefined;
      w.reject(this.failure);
    }
  }

  private fail(e: Error): void {
    this.failure ??= e;
    this.rejectFailed(this.failure);
    this.deliver();
  }
}
