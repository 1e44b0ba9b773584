/**
 * The printers of bench/print-dispatch.ts in a process of their own, so the
 * devices do not share an event loop with the system under test: N raw-socket
 * sinks (test/helpers/tcp-sink.ts). Prints `{"ports":[...]}` once listening;
 * answers each stdin line `count` with `{"received":n,"maxConcurrent":m}`;
 * exits when stdin closes.
 * Run: node --import tsx bench/sink-server.ts <count>
 */
import { createInterface } from 'node:readline';
import { TcpSink } from '../test/helpers/tcp-sink.js';

const sinks = await Promise.all(Array.from({ length: Number(process.argv[2] ?? 20) }, () => TcpSink.start({ keepBytes: false })));
process.stdout.write(`${JSON.stringify({ ports: sinks.map((s) => s.port) })}\n`);
const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (line.trim() !== 'count') return;
  const received = sinks.reduce((n, s) => n + s.jobs().length, 0);
  process.stdout.write(`${JSON.stringify({ received, maxConcurrent: Math.max(...sinks.map((s) => s.maxConcurrent())) })}\n`);
});
lines.on('close', () => process.exit(0));
