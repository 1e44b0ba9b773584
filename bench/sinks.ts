/**
 * The printers of the print benchmarks: N raw-socket sinks in a child
 * process of their own (bench/sink-server.ts), so the devices never compete
 * with the system under test for its event loop; and submitting clients.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { ROOT } from './lib.js';

export interface Sinks {
  ports: number[];
  /** Jobs received so far (connections that carried bytes and closed), all sinks together, and the most at once on one sink. */
  count(): Promise<{ received: number; maxConcurrent: number }>;
  close(): void;
}

export async function startSinks(n: number): Promise<Sinks> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/sink-server.ts'), String(n)], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = createInterface({ input: child.stdout });
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (l) => waiting.shift()?.(l));
  const next = () => new Promise<string>((resolve) => waiting.push(resolve));
  const { ports } = JSON.parse(await next()) as { ports: number[] };
  return {
    ports,
    async count() {
      const answer = next();
      child.stdin.write('count\n');
      return JSON.parse(await answer) as { received: number; maxConcurrent: number };
    },
    close: () => child.stdin.end(),
  };
}

/** Resolves once the sinks received `total` jobs in all (polled every 20 ms). */
export async function waitReceived(sinks: Sinks, total: number, timeoutMs = 600_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const { received } = await sinks.count();
    if (received >= total) return;
    if (Date.now() > end) throw new Error(`only ${received} of ${total} jobs arrived`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs `fn(i)` for i < n with `c` at a time. */
export async function withClients(n: number, c: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: c }, async () => {
    while (next < n) await fn(next++);
  }));
}
