import { createHash, randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { PrintBackend, PrintTicket } from '../../../src/connectors/print-backends/print-backend.js';
import { PRINT_BACKEND_TYPES, printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import type { AppError } from '../../../src/errors/app-error.js';
import { createLogger } from '../../../src/logging/logger.js';
import { deliveryKind, testConfinement } from '../../helpers/print-delivery.js';
import { IppEvePrinter } from '../../helpers/ippeveprinter.js';
import { LpdReceiver } from '../../helpers/lpd-receiver.js';
import { TcpSink } from '../../helpers/tcp-sink.js';

/**
 * A real device for each print backend type: its connection, what it has
 * received (every job's bytes), and a way to take it offline. A new backend
 * type must add its target here; the first test fails until it does.
 */
interface Target {
  connection: string;
  received(): Promise<Buffer[]>;
  takeDown(): Promise<void>;
  close(): Promise<void>;
}

const TARGETS: Record<string, () => Promise<Target>> = {
  directory: async () => {
    const base = await mkdtemp(path.join(os.tmpdir(), 'wcr-printdir-'));
    const dir = path.join(base, 'out');
    await mkdir(dir);
    return {
      connection: pathToFileURL(dir).href,
      // what a consumer of the directory sees: visible files only
      received: async () => {
        const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
        return Promise.all(names.map((n) => readFile(path.join(dir, n))));
      },
      takeDown: () => rm(dir, { recursive: true, force: true }),
      close: () => rm(base, { recursive: true, force: true }),
    };
  },
  socket: async () => {
    const sink = await TcpSink.start();
    return {
      connection: sink.connection,
      // a connection that carried bytes and was closed is one job the device got
      received: async () => sink.received(),
      takeDown: () => sink.down(),
      close: () => sink.close(),
    };
  },
  // CUPS's ippeveprinter on loopback: every document it accepted is in its spool
  ipp: async () => {
    const printer = await IppEvePrinter.start({ formats: ['application/pdf'] });
    return {
      connection: printer.connection,
      received: async () => (await printer.documents()).map((d) => d.bytes),
      takeDown: () => printer.down(),
      close: () => printer.close(),
    };
  },
  // an RFC 1179 receiver: a job counts once its control file was acknowledged
  lpr: async () => {
    const lpd = await LpdReceiver.start({ queues: ['raw'] });
    return {
      connection: lpd.connectionFor('raw'),
      received: async () => lpd.received(),
      takeDown: () => lpd.down(),
      close: () => lpd.close(),
    };
  },
};

const log = createLogger('silent');
const opened: Target[] = [];
afterAll(async () => {
  for (const t of opened) await t.close();
});

const ticket = (over: Partial<PrintTicket> = {}): PrintTicket => ({
  jobId: randomUUID(), name: 'contract.pdf', user: 'alice', mimeType: 'application/pdf', copies: 1, ...over,
});
const never = () => new AbortController().signal;
/** A source that sends `head` and then fails. */
const failing = (head: Buffer) => Readable.from((async function* () {
  yield head;
  throw new Error('source broke');
})());

it('every registered print backend type has a test target', () => {
  for (const t of PRINT_BACKEND_TYPES) expect(Object.keys(TARGETS), `add a target for "${t.name}"`).toContain(t.name);
});

it('connections that do not parse or have no backend are 400', () => {
  const bad = (c: string, code: string) => expect(() => printBackendFor(c, { log, confinement: testConfinement })).toThrow(expect.objectContaining({ status: 400, code }) as AppError);
  bad('not a url', 'INVALID_CONNECTION');
  bad('gopher://host/printer', 'UNSUPPORTED_CONNECTION');
});

for (const type of PRINT_BACKEND_TYPES) {
  describe(`print backend: ${type.name}`, () => {
    const make = async (): Promise<{ target: Target; backend: PrintBackend }> => {
      const target = await TARGETS[type.name]!();
      opened.push(target);
      const backend = printBackendFor(target.connection, { log, confinement: testConfinement });
      expect(type.schemes).toContain(new URL(backend.connection).protocol.replace(/:$/, ''));
      return { target, backend };
    };

    it('delivers a job\'s bytes exactly once, intact, and acknowledges it', async () => {
      const { target, backend } = await make();
      // 8 MiB from a stream: nothing holds it whole
      const chunk = Buffer.alloc(64 * 1024, 7);
      const hash = createHash('sha256');
      for (let i = 0; i < 128; i++) hash.update(chunk);
      const ack = await backend.send(ticket(), Readable.from((function* () { for (let i = 0; i < 128; i++) yield chunk; })()), never());
      expect(ack.message.length).toBeGreaterThan(0);
      const got = await target.received();
      expect(got).toHaveLength(1);
      expect(createHash('sha256').update(got[0]!).digest('hex')).toBe(hash.digest('hex'));
    });

    it('a second send of the same job never overwrites the first', async () => {
      const { target, backend } = await make();
      const t = ticket();
      await backend.send(t, Readable.from([Buffer.from('first')]), never());
      const kind = await deliveryKind(backend.send(t, Readable.from([Buffer.from('second')]), never()));
      if (type.detectsDuplicates) expect(kind).toBe('duplicate');
      const got = (await target.received()).map(String);
      expect(got).toContain('first');
      expect(got.length).toBe(type.detectsDuplicates ? 1 : 2);
    });

    it('"not-delivered" means nothing arrived: a source failing midway, an aborted send', async () => {
      const { target, backend } = await make();
      const kind = await deliveryKind(backend.send(ticket(), failing(Buffer.alloc(100_000, 1)), never()));
      expect(['not-delivered', 'uncertain']).toContain(kind);
      if (kind === 'not-delivered') expect(await target.received()).toEqual([]);
      const ctl = new AbortController();
      ctl.abort();
      expect(await deliveryKind(backend.send(ticket(), Readable.from([Buffer.from('x')]), ctl.signal))).toBe('not-delivered');
      if (kind === 'not-delivered') expect(await target.received()).toEqual([]);
    });

    it('checkPhysical: reachable while up; when down, unreachable and a send is not-delivered', async () => {
      const { target, backend } = await make();
      const up = await backend.checkPhysical(never());
      expect(up.reachable).toBe(true);
      expect(up.checked).toBeInstanceOf(Date);
      await target.takeDown();
      const down = await backend.checkPhysical(never());
      expect(down.reachable).toBe(false);
      expect(down.message.length).toBeGreaterThan(0);
      expect(await deliveryKind(backend.send(ticket(), Readable.from([Buffer.from('x')]), never()))).toBe('not-delivered');
    });
  });
}

