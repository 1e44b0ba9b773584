import net from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import type { PrintTicket } from '../../../src/connectors/print-backends/print-backend.js';
import { printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { LpdReceiver } from '../../helpers/lpd-receiver.js';
import { deliveryKind, testConfinement } from '../../helpers/print-delivery.js';

/** What only the LPR backend promises, against an RFC 1179 receiver on loopback. */
const log = createLogger('silent');
const ctx = { log, timeouts: { connectMs: 1000, idleMs: 1000 }, confinement: testConfinement };
const never = new AbortController().signal;
const ticket = (over: Partial<PrintTicket> = {}): PrintTicket => ({ jobId: 'j1', name: 'report.pdf', user: 'alice', mimeType: 'application/pdf', copies: 1, ...over });

const daemons: LpdReceiver[] = [];
afterAll(async () => {
  for (const d of daemons) await d.close();
});
const lpd = async (opts: ConstructorParameters<typeof LpdReceiver>[0] = {}) => {
  const d = await LpdReceiver.start(opts);
  daemons.push(d);
  return d;
};

describe('lpr print backend', () => {
  it('lpr: URLs: port 515 by default, a queue required, nothing else', () => {
    expect(printBackendFor('lpr://printer.local/raw', ctx).connection).toBe('lpr://printer.local:515/raw');
    expect(printBackendFor('lpr://10.0.0.5:5515/lab_1', ctx).connection).toBe('lpr://10.0.0.5:5515/lab_1');
    for (const c of ['lpr://h', 'lpr://h/', 'lpr:///q', 'lpr://h/a/b', 'lpr://h/q?x=1', 'lpr://u:p@h/q', 'lpr://h/%zz']) {
      expect(() => printBackendFor(c, ctx), c).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_CONNECTION' }) as Error);
    }
  });

  it('lpr: data file, then a control file naming host, user, job and one print line per copy, each acknowledged', async () => {
    const d = await lpd({ queues: ['raw'] });
    const body = Buffer.from('%PDF-1.4 the document');
    const ack = await printBackendFor(d.connectionFor('raw'), ctx).send(ticket({ copies: 3, size: body.length }), Readable.from([body]), never);
    expect(ack.message).toContain('control file acknowledged');
    expect(d.received()).toEqual([body]);
    const job = d.jobs[0]!;
    expect(job.queue).toBe('raw');
    const lines = job.control!.split('\n');
    const dataFile = [...job.files.keys()][0]!;
    expect(dataFile).toMatch(/^dfA\d{3}/);
    expect(lines).toEqual(expect.arrayContaining([`P${'alice'}`, 'Jreport.pdf', 'Nreport.pdf', `U${dataFile}`]));
    expect(lines.filter((l) => l === `l${dataFile}`)).toHaveLength(3);
    expect(lines[0]).toMatch(/^H/);
    expect(lines[0]!.length).toBeLessThanOrEqual(32);
    // no privileged source port is asked for
    expect(job.sourcePort).toBeGreaterThan(0);
  });

  it('lpr: a queue the daemon does not serve is refused, nothing received', async () => {
    const d = await lpd({ queues: ['raw'] });
    const err = await printBackendFor(d.connectionFor('other'), ctx).send(ticket({ size: 1 }), Readable.from([Buffer.from('x')]), never).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'refused' });
    expect((err as Error).message).toContain('receive a printer job');
    expect(d.received()).toEqual([]);
  });

  it('lpr: a daemon lost midway through the document: uncertain; lost before it: not-delivered', async () => {
    const d = await lpd({ dieAfterBytes: 100_000 });
    const big = Array.from({ length: 16 }, () => Buffer.alloc(64 * 1024, 2));
    const size = big.reduce((n, b) => n + b.length, 0);
    expect(await deliveryKind(printBackendFor(d.connectionFor(), ctx).send(ticket({ size }), Readable.from(big), never))).toBe('uncertain');
    await d.down();
    expect(await deliveryKind(printBackendFor(d.connectionFor(), ctx).send(ticket({ size }), Readable.from(big), never))).toBe('not-delivered');
    expect((await printBackendFor(d.connectionFor(), ctx).checkPhysical(never)).reachable).toBe(false);
  });

  it('lpr: a document shorter than announced is not passed off as complete', async () => {
    const d = await lpd();
    const err = await printBackendFor(d.connectionFor(), ctx).send(ticket({ size: 10 }), Readable.from([Buffer.from('short')]), never).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'uncertain' });
    expect(d.received()).toEqual([]);
  });

  it('timeout: a daemon that stops reading in the middle of a large data file fails the delivery after the idle timeout, not twice it', async () => {
    // acknowledges the queue and the data file's header, then takes nothing more: the kernel's buffers fill and the write stalls
    const server = net.createServer((s) => {
      s.on('error', () => {});
      let acks = 0;
      s.on('data', (c: Buffer) => {
        for (const b of c) {
          if (b === 0x0a && acks < 2) {
            acks++;
            s.write(Buffer.alloc(1));
            if (acks === 2) s.pause();
          }
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const idleMs = 2000;
    const body = Buffer.alloc(32 * 1024 * 1024, 1);
    const started = performance.now();
    const err = await printBackendFor(`lpr://127.0.0.1:${(server.address() as net.AddressInfo).port}/raw`, { ...ctx, timeouts: { connectMs: 1000, idleMs } })
      .send(ticket({ size: body.length }), Readable.from([body]), never).catch((e: unknown) => e);
    const took = performance.now() - started;
    server.close();
    expect(err).toMatchObject({ kind: 'uncertain' });
    expect((err as Error).message).toMatch(/ETIMEDOUT/);
    // Node's own socket timeout re-arms once while a write is pending and fired at ~2 idleMs
    expect(took).toBeGreaterThanOrEqual(idleMs * 0.9);
    // (the bound sits between the two: a loaded machine's event loop adds a second to the right answer, seen in CI at 1.56 idleMs)
    expect(took).toBeLessThan(idleMs * 1.75);
  });

  it('lpr: without a size the document is counted first, then sent whole', async () => {
    const d = await lpd();
    const parts = [Buffer.from('one '), Buffer.from('two '), Buffer.from('three')];
    await printBackendFor(d.connectionFor(), ctx).send(ticket(), Readable.from(parts), never);
    expect(d.received().map(String)).toEqual(['one two three']);
  });
});
