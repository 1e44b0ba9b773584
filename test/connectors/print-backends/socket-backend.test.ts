import net from 'node:net';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import type { PrintDeliveryError, PrintTicket } from '../../../src/connectors/print-backends/print-backend.js';
import { printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { deliveryKind, testConfinement } from '../../helpers/print-delivery.js';
import { TcpSink } from '../../helpers/tcp-sink.js';

/** What only the raw-socket backend promises: how it classifies failures, its timeouts, its URLs. */
const log = createLogger('silent');
const ctx = { log, timeouts: { connectMs: 500, idleMs: 400 }, confinement: testConfinement };
const ticket: PrintTicket = { jobId: 'j1', name: 'a.pdf', user: 'u', mimeType: 'application/pdf', copies: 1 };
const never = new AbortController().signal;
const servers: net.Server[] = [];
afterAll(() => {
  for (const s of servers) s.close();
});
/** A server doing something unkind with each connection. */
async function hostile(onConnection: (s: net.Socket) => void): Promise<string> {
  const server = net.createServer((s) => {
    s.on('error', () => {});
    onConnection(s);
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return `socket://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}
/** A source that waits before its first byte, so the device can act first. */
const slow = (delayMs: number, chunks: Buffer[]) => Readable.from((async function* () {
  await sleep(delayMs);
  yield* chunks;
})());

describe('socket print backend', () => {
  it('URLs: port 9100 by default, host required, nothing but host and port', () => {
    expect(printBackendFor('socket://printer.local', ctx).connection).toBe('socket://printer.local:9100');
    expect(printBackendFor('socket://10.0.0.5:9101/', ctx).connection).toBe('socket://10.0.0.5:9101');
    expect(printBackendFor('socket://[::1]:9100', ctx).connection).toBe('socket://[::1]:9100');
    for (const c of ['socket:///x', 'socket://h:9100/queue', 'socket://h?x=1', 'socket://u:p@h']) {
      expect(() => printBackendFor(c, ctx), c).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_CONNECTION' }) as Error);
    }
  });

  it('a device reset before the first byte: not-delivered (safe to retry)', async () => {
    const url = await hostile((s) => s.resetAndDestroy());
    const backend = printBackendFor(url, ctx);
    expect(await deliveryKind(backend.send(ticket, slow(150, [Buffer.from('data')]), never))).toBe('not-delivered');
  });

  it('a device that resets midway or never acknowledges: uncertain, never resolved', async () => {
    const url = await hostile((s) => s.once('data', () => s.resetAndDestroy()));
    const big = Array.from({ length: 64 }, () => Buffer.alloc(256 * 1024, 1));
    expect(await deliveryKind(printBackendFor(url, ctx).send(ticket, Readable.from(big), never))).toBe('uncertain');
    const hold = await TcpSink.start({ mode: 'hold' });
    const started = performance.now();
    const err = await printBackendFor(hold.connection, ctx).send(ticket, Readable.from([Buffer.from('job')]), never).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'uncertain' });
    expect(performance.now() - started).toBeGreaterThanOrEqual(350);
    expect(hold.connections[0]!.bytes).toBe(3);
    await hold.close();
  });

  it('abort while sending: uncertain once bytes left; the connection is closed', async () => {
    const hold = await TcpSink.start({ mode: 'hold' });
    const ctl = new AbortController();
    const p = printBackendFor(hold.connection, { log, confinement: testConfinement }).send(ticket, Readable.from([Buffer.from('x')]), ctl.signal);
    await sleep(100);
    ctl.abort(new Error('cancelled'));
    expect(await deliveryKind(p)).toBe('uncertain');
    await sleep(50);
    expect(hold.connections[0]!.ended).toBeDefined();
    await hold.close();
  });

  it('refused connections are not-delivered; checkPhysical reports them', async () => {
    const sink = await TcpSink.start();
    const port = sink.port;
    await sink.down();
    const refused = printBackendFor(`socket://127.0.0.1:${port}`, ctx);
    const err = await refused.send(ticket, Readable.from([Buffer.from('x')]), never).catch((e: unknown) => e as PrintDeliveryError);
    expect(err).toMatchObject({ kind: 'not-delivered' });
    expect((err as Error).message).toContain('ECONNREFUSED');
    expect(await refused.checkPhysical(never)).toMatchObject({ reachable: false, message: expect.stringContaining('ECONNREFUSED') as string });
  });

  it('timeout: a device that stops reading in the middle of a large write fails the delivery after the idle timeout, not twice it', async () => {
    // the device takes nothing: the kernel's buffers fill, then a write of the job's one large chunk stalls
    const url = await hostile((s) => s.pause());
    const idleMs = 2000;
    const body = Buffer.alloc(32 * 1024 * 1024, 1);
    const started = performance.now();
    const err = await printBackendFor(url, { ...ctx, timeouts: { connectMs: 500, idleMs } })
      .send(ticket, Readable.from([body]), never).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(err).toMatchObject({ kind: 'uncertain' });
    expect((err as Error).message).toMatch(/ETIMEDOUT/);
    // Node's own socket timeout re-arms once when a write is pending and fired at ~2 idleMs
    expect(took).toBeGreaterThanOrEqual(idleMs * 0.9);
    // (the bound sits between the two: a loaded machine's event loop adds a second to the right answer, seen in CI at 1.56 idleMs)
    expect(took).toBeLessThan(idleMs * 1.75);
  });

  it('the device\'s back-channel data is read and dropped; the job still completes', async () => {
    const url = await hostile((s) => {
      s.write('@PJL INFO STATUS\r\n');
      s.on('data', () => {});
      s.on('end', () => s.end());
    });
    const ack = await printBackendFor(url, ctx).send(ticket, Readable.from([Buffer.from('%!PS\n')]), never);
    expect(ack.message).toMatch(/5 bytes sent/);
  });
});
