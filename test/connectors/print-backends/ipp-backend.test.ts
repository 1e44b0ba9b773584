import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import tls from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import type { DeliveryWatch, PrintTicket } from '../../../src/connectors/print-backends/print-backend.js';
import { printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { IppEvePrinter } from '../../helpers/ippeveprinter.js';
import { deliveryKind, testConfinement } from '../../helpers/print-delivery.js';

/** What only the IPP backend promises, against CUPS's ippeveprinter on loopback. */
const log = createLogger('silent');
const ctx = { log, timeouts: { connectMs: 2000, idleMs: 2000 }, confinement: testConfinement };
const never = new AbortController().signal;
const ticket = (over: Partial<PrintTicket> = {}): PrintTicket => ({ jobId: 'j1', name: 'report.pdf', user: 'alice', mimeType: 'application/pdf', copies: 1, ...over });
const pdf = (text = 'hello') => Readable.from([Buffer.from(`%PDF-1.4\n${text}\n%%EOF\n`)]);

const printers: IppEvePrinter[] = [];
const servers: (net.Server | tls.Server)[] = [];
afterAll(async () => {
  for (const s of servers) s.close();
  for (const p of printers) await p.close();
});
const printer = async (opts: Parameters<typeof IppEvePrinter.start>[0] = {}) => {
  const p = await IppEvePrinter.start(opts);
  printers.push(p);
  return p;
};

/** A watch that records the log lines and says "canceled" once `cancel` is set. */
const recorder = (): DeliveryWatch & { lines: string[]; cancel: boolean } => {
  const lines: string[] = [];
  const w = {
    lines,
    cancel: false,
    note: async (text: string) => void lines.push(text),
    canceled: async () => w.cancel,
  };
  return w;
};

/** A loopback proxy to `port` that cuts a connection once the client sent more than `cutAfter` bytes on it. */
async function cutting(port: number, cutAfter: number): Promise<number> {
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: '127.0.0.1', port });
    let n = 0;
    client.on('error', () => {});
    upstream.on('error', () => {});
    client.on('data', (c: Buffer) => {
      n += c.length;
      if (n > cutAfter) {
        client.resetAndDestroy();
        upstream.destroy();
        return;
      }
      upstream.write(c);
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return (server.address() as net.AddressInfo).port;
}

describe('ipp print backend', () => {
  it('ipp: URLs: port 631 and /ipp/print by default, ipps, nothing but host, port and path', () => {
    expect(printBackendFor('ipp://printer.local', ctx).connection).toBe('ipp://printer.local:631/ipp/print');
    expect(printBackendFor('ipp://10.0.0.5:8631/printers/lab', ctx).connection).toBe('ipp://10.0.0.5:8631/printers/lab');
    expect(printBackendFor('ipps://[::1]/ipp/print', ctx).connection).toBe('ipps://[::1]:631/ipp/print');
    for (const c of ['ipp:///x', 'ipp://h/p?x=1', 'ipp://u:p@h/p', 'ipps://h/p#f', 'ipp://h:0/p']) {
      expect(() => printBackendFor(c, ctx), c).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_CONNECTION' }) as Error);
    }
  });

  it('ipp: the job goes with its format, name, user and copies; its states and reasons are noted until completed', async () => {
    const p = await printer();
    const watch = recorder();
    const ack = await printBackendFor(p.connection, ctx).send(ticket({ copies: 2 }), pdf(), never, watch);
    expect(ack.deviceJobId).toMatch(/^\d+$/);
    expect(ack.message).toContain('completed (job-completed-successfully)');
    const docs = await p.documents();
    expect(docs).toHaveLength(1);
    expect(String(docs[0]!.bytes)).toContain('hello');
    const attrs = await p.attributesOf(docs[0]!.name);
    expect(attrs.get('CONTENT_TYPE')).toBe('application/pdf');
    expect(attrs.get('IPP_COPIES')).toBe('2');
    expect(attrs.get('IPP_JOB_NAME')).toBe('report.pdf');
    expect(attrs.get('IPP_JOB_ORIGINATING_USER_NAME')).toBe('alice');
    expect(watch.lines[0]).toContain(`accepted the document as job ${ack.deviceJobId}`);
    expect(watch.lines.at(-1)).toMatch(/completed \(job-completed-successfully\)/);
  });

  it('ipp: checkPhysical reports printer-state, its reasons, make and model and the formats it takes', async () => {
    const p = await printer({ formats: ['application/pdf', 'text/plain'] });
    const state = await printBackendFor(p.connection, ctx).checkPhysical(never);
    expect(state.reachable).toBe(true);
    expect(state.details).toMatchObject({ printerState: 'idle', printerStateReasons: 'none', printerMakeAndModel: 'Example Printer' });
    expect(String(state.details!.documentFormatSupported)).toContain('text/plain');
  });

  it('ipp: a busy printer (server-error-busy) is not-delivered and takes the job once free', async () => {
    const p = await printer({ printSeconds: 2 });
    const backend = printBackendFor(p.connection, ctx);
    const first = recorder();
    const printing = backend.send(ticket({ jobId: 'a', name: 'first.pdf' }), pdf('first'), never, first);
    while (!first.lines.some((l) => l.includes('processing'))) await new Promise((r) => setTimeout(r, 20));
    const busy = await backend.send(ticket({ jobId: 'b', name: 'second.pdf' }), pdf('second'), never).catch((e: unknown) => e);
    expect(busy).toMatchObject({ kind: 'not-delivered' });
    expect((busy as Error).message).toContain('server-error-busy');
    await printing;
    await backend.send(ticket({ jobId: 'b', name: 'second.pdf' }), pdf('second'), never);
    expect((await p.documents()).map((d) => String(d.bytes).split('\n')[1])).toEqual(['first', 'second']);
  });

  it('ipp: a printer stopped and started again: unreachable and not-delivered while down, printing after', async () => {
    const p = await printer();
    const backend = printBackendFor(p.connection, ctx);
    await p.down();
    expect((await backend.checkPhysical(never)).reachable).toBe(false);
    expect(await deliveryKind(backend.send(ticket(), pdf(), never))).toBe('not-delivered');
    await p.up();
    expect((await backend.checkPhysical(never)).reachable).toBe(true);
    await backend.send(ticket(), pdf('after'), never);
    expect((await p.documents()).map((d) => String(d.bytes))).toEqual([expect.stringContaining('after')]);
  });

  it('ipp: a document format the printer does not take is refused, and nothing of it holds the printer', async () => {
    const p = await printer({ formats: ['application/pdf'] });
    const err = await printBackendFor(p.connection, ctx).send(ticket({ mimeType: 'image/jpeg', name: 'photo.jpg' }), Readable.from([Buffer.from('jpeg')]), never)
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'refused' });
    expect((err as Error).message).toMatch(/document-format|format/);
    expect(await p.documents()).toEqual([]);
    // the printer is free: the refused Print-Job left no job behind
    await printBackendFor(p.connection, ctx).send(ticket(), pdf(), never);
  });

  it('ipp: a job canceled while at the device gets Cancel-Job and ends there as canceled', async () => {
    const p = await printer({ printSeconds: 3 });
    const watch = recorder();
    const sending = printBackendFor(p.connection, ctx).send(ticket(), pdf(), never, watch).catch((e: unknown) => e);
    while (!watch.lines.some((l) => l.includes('processing'))) await new Promise((r) => setTimeout(r, 20));
    watch.cancel = true;
    const err = await sending;
    expect(err).toMatchObject({ kind: 'refused' });
    expect((err as Error).message).toContain('Cancel-Job: successful-ok');
    expect(watch.lines.some((l) => l.startsWith('canceled: Cancel-Job'))).toBe(true);
  });

  it('ipp: an upload cut after document bytes left is uncertain, never retried', async () => {
    const p = await printer();
    const port = await cutting(p.port, 64 * 1024);
    const backend = printBackendFor(`ipp://127.0.0.1:${port}/ipp/print`, ctx);
    const big = Readable.from(Array.from({ length: 32 }, () => Buffer.alloc(16 * 1024, 1)));
    const err = await backend.send(ticket(), big, never).catch((e: unknown) => e);
    expect(err).toMatchObject({ kind: 'uncertain' });
    expect(await deliveryKind(backend.send(ticket(), pdf(), AbortSignal.abort()))).toBe('not-delivered');
  });
});

describe('ipps print backend', () => {
  // ippeveprinter resets TLS handshakes here (no certificate of its own), so the peer is a loopback TLS server with a self-signed certificate
  it('ipps: TLS over the judged connection, the certificate checked: an untrusted printer is refused, nothing sent', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-ipps-'));
    try {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
        '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')], { stdio: 'ignore' });
      let received = 0;
      const server = tls.createServer({ key: await readFile(path.join(dir, 'key.pem')), cert: await readFile(path.join(dir, 'cert.pem')) }, (s) => {
        s.on('error', () => {});
        s.on('data', (c: Buffer) => (received += c.length));
      });
      server.on('tlsClientError', () => {});
      servers.push(server);
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
      const backend = printBackendFor(`ipps://127.0.0.1:${(server.address() as net.AddressInfo).port}/ipp/print`, ctx);
      const err = await backend.send(ticket(), pdf(), never).catch((e: unknown) => e);
      expect(err).toMatchObject({ kind: 'refused' });
      expect((err as Error).message).toMatch(/SELF_SIGNED|CERT/);
      const check = await backend.checkPhysical(never);
      expect(check.reachable).toBe(false);
      expect(check.message).toMatch(/SELF_SIGNED|CERT/);
      expect(received).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
