import { mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfinementError, PrintConfinement, type ConfinementRules, type Resolve } from '../../../src/connectors/print-backends/confinement.js';
import { printBackendFor } from '../../../src/connectors/print-backends/registry.js';
import { createLogger } from '../../../src/logging/logger.js';
import { tempDir } from '../../helpers/fs.js';
import { deliveryKind } from '../../helpers/print-delivery.js';
import { TcpSink } from '../../helpers/tcp-sink.js';

/**
 * The confinement rule on its own (the server-level tests are in
 * test/areas/print/printers/confinement.test.ts): names resolved through a
 * resolver the test controls, so a name that "changes" its address can be
 * shown; every connection that is let through goes to a sink on 127.0.0.1.
 */
const log = createLogger('silent');
let sink: TcpSink;
beforeAll(async () => {
  sink = await TcpSink.start();
});
afterAll(async () => sink?.close());

const rules = (extra: Partial<ConfinementRules> = {}): ConfinementRules => ({
  directoryRoots: [], allow: [], deny: [], own: [{ what: 'Redis', host: 'redis.internal', port: 6379 }], ...extra,
});
const refused = (p: Promise<unknown>) => p.then(() => 'allowed', (e: unknown) => (e instanceof ConfinementError ? `refused: ${e.message}` : `other: ${String(e)}`));

describe('addresses', () => {
  const names = new Map<string, string[]>([
    ['redis.internal', ['127.0.0.1']],
    ['metadata.evil', ['169.254.169.254']],
    ['mixed.evil', ['127.0.0.1', 'fe80::1']],
    ['printer.lan', ['127.0.0.1']],
  ]);
  const resolve: Resolve = async (host) => names.get(host) ?? Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
  const c = new PrintConfinement(rules({ deny: [{ cidr: '127.0.0.0/8', ports: [11211] }], allow: [] }), resolve);

  it('confinement: never link-local, unspecified, multicast or broadcast, in any spelling; names judged by every address they resolve to', async () => {
    for (const host of ['169.254.169.254', '::ffff:169.254.169.254', '::ffff:a9fe:a9fe', '64:ff9b::a9fe:a9fe', 'fe80::1', '0.0.0.0', '::', '224.0.0.1', 'ff02::1', '255.255.255.255', 'metadata.evil', 'mixed.evil']) {
      expect(await refused(c.check({ kind: 'network', host, port: 80 })), host).toMatch(/^refused: .* is not allowed for printers/);
    }
    for (const host of ['127.0.0.1', '10.1.2.3', '192.168.0.10', 'fd00::1', '::1', 'printer.lan']) {
      expect(await refused(c.check({ kind: 'network', host, port: 9100 })), host).toBe('allowed');
    }
  });

  it('confinement: the service\'s own endpoints by resolved address and port, this host\'s addresses counting as one; the deny list by range and port', async () => {
    for (const host of ['127.0.0.1', '127.0.0.2', '::1', '::ffff:127.0.0.1', 'redis.internal', 'printer.lan']) {
      expect(await refused(c.check({ kind: 'network', host, port: 6379 })), host).toMatch(/own Redis/);
    }
    expect(await refused(c.check({ kind: 'network', host: '10.0.0.1', port: 6379 }))).toBe('allowed');
    expect(await refused(c.check({ kind: 'network', host: '127.0.0.5', port: 11211 }))).toMatch(/deny lists it/);
    const only = new PrintConfinement(rules({ allow: ['192.168.0.0/16', { cidr: '::ffff:10.0.0.0/104', ports: [9100] }] }), resolve);
    expect(await refused(only.check({ kind: 'network', host: '192.168.3.4', port: 1 }))).toBe('allowed');
    expect(await refused(only.check({ kind: 'network', host: '10.9.9.9', port: 9100 }))).toBe('allowed');
    expect(await refused(only.check({ kind: 'network', host: '10.9.9.9', port: 9101 }))).toMatch(/allow does not list it/);
    expect(await refused(only.check({ kind: 'network', host: '172.16.0.1', port: 9100 }))).toMatch(/allow does not list it/);
  });

  it('confinement: a name that now resolves to a refused address fails the delivery before any connect', async () => {
    names.set('printer.lan', ['127.0.0.1']);
    const ctx = { log, timeouts: { connectMs: 2000, idleMs: 2000 }, confinement: new PrintConfinement(rules({ deny: [{ cidr: '127.0.0.1', ports: [sink.port] }] }), resolve) };
    const ticket = { jobId: 'j1', name: 'doc', user: 'u', mimeType: 'application/pdf', copies: 1 };
    const backend = printBackendFor(`socket://printer.lan:${sink.port}`, ctx);
    expect(await deliveryKind(backend.send(ticket, Readable.from([Buffer.from('x')]), new AbortController().signal))).toBe('refused');
    expect((await backend.checkPhysical(new AbortController().signal)).message).toMatch(/deny lists it/);
    // the connect itself judges too (a backend that skipped the registry's check)
    expect(await refused(ctx.confinement.connect('printer.lan', sink.port, { signal: new AbortController().signal, timeoutMs: 2000 }))).toMatch(/deny lists it/);
    expect(sink.connections).toHaveLength(0);
    // allowed again: the same backend connects
    names.set('printer.lan', ['127.0.0.1']);
    const open = printBackendFor(`socket://printer.lan:${sink.port}`, { ...ctx, confinement: new PrintConfinement(rules(), resolve) });
    expect(await deliveryKind(open.send(ticket, Readable.from([Buffer.from('x')]), new AbortController().signal))).toBe('resolved');
    expect(sink.connections).toHaveLength(1);
  });
});

describe('directories', () => {
  it('confinement: a directory only under a root, judged on its real path (links followed, a dangling link refused); no roots, no directory printers', async () => {
    const root = await tempDir('wcr-conf-root-');
    const outside = await tempDir('wcr-conf-out-');
    await mkdir(path.join(root, 'a'));
    await symlink(outside, path.join(root, 'out'));
    await symlink(path.join(outside, 'missing'), path.join(root, 'dangling'));
    const c = new PrintConfinement(rules({ directoryRoots: [root] }));
    for (const dir of [root, path.join(root, 'a'), path.join(root, 'not-yet', 'deeper')]) {
      expect(await refused(c.check({ kind: 'directory', path: dir })), dir).toBe('allowed');
    }
    for (const dir of [outside, path.join(root, 'out'), path.join(root, 'out', 'x'), path.join(root, 'dangling'), '/etc', '/', `${root}-sibling`]) {
      expect(await refused(c.check({ kind: 'directory', path: dir })), dir).toMatch(/^refused: the directory is not allowed for printers/);
    }
    expect(await refused(new PrintConfinement(rules()).check({ kind: 'directory', path: root }))).toMatch(/directoryRoots is empty/);
  });
});
