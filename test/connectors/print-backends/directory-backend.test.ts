import { mkdir, readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { deliveryName } from '../../../src/connectors/print-backends/directory/directory-backend.js';
import { PrintDeliveryError, type PrintTicket } from '../../../src/connectors/print-backends/print-backend.js';
import { printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { tempDir } from '../../helpers/fs.js';
import { testConfinement } from '../../helpers/print-delivery.js';

/** What only the directory backend promises: names stay inside, no leftovers, local directories only. */
const log = createLogger('silent');
let base: string;
let dir: string;
beforeAll(async () => {
  base = await tempDir('wcr-dirprinter-');
  dir = path.join(base, 'printer');
  await mkdir(dir);
});

const ticket = (jobId: string, name: string): PrintTicket => ({ jobId, name, user: 'u', mimeType: 'application/pdf', copies: 1 });
const signal = new AbortController().signal;

describe('directory print backend', () => {
  it('names each file after its job; hostile names stay inside the directory and visible', async () => {
    const backend = printBackendFor(pathToFileURL(dir).href, { log, confinement: testConfinement });
    for (const [i, name] of ['../../escape.pdf', '/etc/passwd', '.hidden', '', 'a\u0000b\nc.pdf', 'x'.repeat(400)].entries()) {
      const ack = await backend.send(ticket(`job${i}`, name), Readable.from([Buffer.from(`n${i}`)]), signal);
      expect(ack.deviceJobId).toBe(deliveryName(ticket(`job${i}`, name)));
      expect(ack.deviceJobId!.startsWith(`job${i}-`)).toBe(true);
      // eslint-disable-next-line no-control-regex -- the point is that control characters never reach a file name
      expect(ack.deviceJobId).not.toMatch(/[/\\\u0000\n]/);
      expect(await readFile(path.join(dir, ack.deviceJobId!), 'utf8')).toBe(`n${i}`);
    }
    expect(await readdir(base)).toEqual(['printer']);
    expect((await readdir(dir)).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('a failed or refused delivery leaves no temporary file behind', async () => {
    const backend = printBackendFor(pathToFileURL(dir).href, { log, confinement: testConfinement });
    const before = await readdir(dir);
    const broken = Readable.from((async function* () {
      yield Buffer.alloc(1000);
      throw new Error('source broke');
    })());
    await expect(backend.send(ticket('broken', 'b.pdf'), broken, signal)).rejects.toBeInstanceOf(PrintDeliveryError);
    await expect(backend.send(ticket('../bad', 'b.pdf'), Readable.from([Buffer.from('x')]), signal)).rejects.toMatchObject({ kind: 'refused' });
    await backend.send(ticket('twice', 't.pdf'), Readable.from([Buffer.from('1')]), signal);
    await expect(backend.send(ticket('twice', 't.pdf'), Readable.from([Buffer.from('2')]), signal)).rejects.toMatchObject({ kind: 'duplicate' });
    expect((await readdir(dir)).sort()).toEqual([...before, 'twice-t.pdf'].sort());
  });

  it('only local directories: a host, a query or credentials are 400', () => {
    for (const c of ['file://server/share', 'file:///tmp/x?y=1', 'file://user@localhost/tmp']) {
      expect(() => printBackendFor(c, { log, confinement: testConfinement }), c).toThrow(expect.objectContaining({ status: 400, code: 'INVALID_CONNECTION' }) as Error);
    }
    expect(printBackendFor('file://localhost/tmp/out', { log, confinement: testConfinement }).connection).toBe('file:///tmp/out');
  });
});
