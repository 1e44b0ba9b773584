import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { judgeAddress } from '../../src/net/address-policy.js';
import { ForbiddenAddressError, guardedConnect } from '../../src/net/safe-fetch.js';

/** Every spelling of a non-public address is refused; public ones (also embedded in IPv6) are allowed. */
describe('judgeAddress', () => {
  it.each([
    // IPv4 loopback, private, CGNAT, link-local (cloud metadata), unspecified, multicast, broadcast, reserved
    '127.0.0.1', '127.255.255.254', '10.0.0.1', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1',
    '169.254.169.254', '0.0.0.0', '0.1.2.3', '224.0.0.1', '239.255.255.250', '255.255.255.255', '192.0.2.1',
    '198.18.0.1', '240.0.0.1',
    // IPv6 loopback, unspecified, link-local (with a zone), unique-local, multicast, site-local, documentation, discard
    '::1', '::', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'fd12:3456::1', 'ff02::1', 'ff05::2', 'fec0::1', '2001:db8::1', '100::1',
    // IPv4-mapped, in every notation, with loopback and private addresses inside
    '::ffff:7f00:1', '::ffff:127.0.0.1', '::FFFF:7F00:0001', '0:0:0:0:0:ffff:7f00:1', '::ffff:a00:1', '::ffff:192.168.0.1',
    '[::ffff:7f00:1]',
    // IPv4-translated (RFC 6145), IPv4-compatible (deprecated), NAT64 (RFC 6052, RFC 8215), 6to4 and Teredo
    '::ffff:0:7f00:1', '::127.0.0.1', '::7f00:1', '::a00:1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::a00:1',
    '2002:7f00:1::1', '2002:c0a8:101::', '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    // not addresses at all
    'localhost', '', '1.2.3', '127.1', '0x7f000001', '::ffff:999.1.1.1',
  ])('refuses %j', (address) => {
    expect(judgeAddress(address).allowed).toBe(false);
  });

  it.each([
    ['93.184.216.34', '93.184.216.34'],
    ['8.8.8.8', '8.8.8.8'],
    ['2606:4700:4700::1111', '2606:4700:4700::1111'],
    ['::ffff:8.8.8.8', '8.8.8.8'],
    ['::ffff:808:808', '8.8.8.8'],
    ['64:ff9b::808:808', '8.8.8.8'],
    ['2002:808:808::1', '8.8.8.8'],
  ])('allows %j (judged as %s)', (address, normalised) => {
    expect(judgeAddress(address)).toMatchObject({ allowed: true, normalised });
  });
});

/**
 * The connector checks the socket it actually got, whatever the URL said: here
 * it is handed a loopback literal directly (no URL check, no DNS lookup runs).
 */
describe('guardedConnect', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = http.createServer((_req, res) => res.end('secret'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => server?.close());

  const connect = (hostname: string) => new Promise<Error | null>((resolve) => {
    guardedConnect({ hostname, host: `${hostname}:${port}`, protocol: 'http:', port: String(port) }, (err, socket) => {
      socket?.destroy();
      resolve(err);
    });
  });

  it.each(['127.0.0.1', 'localhost', '127.1'])('refuses the loopback socket reached through %j', async (hostname) => {
    const err = await connect(hostname);
    expect(err).toBeInstanceOf(ForbiddenAddressError);
  });
});
