import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestRuntime, type TestRuntime } from '../../helpers/runtime.js';
import type { TestClient } from '../../helpers/client.js';
import { finish, launch, rootNames } from '../../helpers/repo.js';

/**
 * The import guard with private addresses refused (the production default):
 * every spelling of this very service's address, including the IPv4-mapped
 * IPv6 form that used to store its own /metrics, ends IMPORT_FORBIDDEN with a
 * plain message, and nothing is stored.
 */
let rt: TestRuntime;
let api: TestClient;
let port: string;

beforeAll(async () => {
  rt = await startTestRuntime({ overrides: { commands: { importAllowPrivate: false, importTimeoutMs: 5000 } } });
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  port = new URL(rt.url!).port;
});
afterAll(async () => {
  await rt?.close();
});

describe('import address guard', () => {
  const hosts = [
    '[::ffff:7f00:1]', '[::ffff:127.0.0.1]', '[0:0:0:0:0:ffff:7f00:1]', // IPv4-mapped
    '[::ffff:0:7f00:1]', // IPv4-translated
    '[::127.0.0.1]', // IPv4-compatible
    '[64:ff9b::7f00:1]', // NAT64
    '[2002:7f00:1::]', // 6to4
    '127.0.0.1', '127.1', '0x7f000001', '2130706433', '0177.0.0.1', // URL parsers turn these into 127.0.0.1
    '0.0.0.0', '[::]', '[::1]', // unspecified (reaches this host) and IPv6 loopback
    '[fe80::1]', '[fd00::1]', '[ff02::1]', '169.254.169.254', '100.64.0.1', '10.0.0.1', '224.0.0.1', // other non-public ranges
    'localhost', // a name that resolves to loopback
  ];

  it('refuses every spelling of a non-public address; nothing is stored', async () => {
    const cids = [];
    for (const [i, host] of hosts.entries()) {
      cids.push([host, await launch(api, 'store', 'import', { url: `http://${host}:${port}/metrics`, name: `guard-${i}.txt` })] as const);
    }
    for (const [host, cid] of cids) {
      const done = await finish(api, 'store', cid);
      expect(done.state, host).toBe('failure');
      expect(done.error?.code, `${host}: ${done.error?.message}`).toBe('IMPORT_FORBIDDEN');
      // plain words: no internal class names or resolver details
      expect(done.error?.message).not.toMatch(/Error|resolves|ECONN|range/);
    }
    expect(await rootNames(api, 'store')).toEqual([]);
  }, 180_000);

  it('the same URLs are imported when private addresses are allowed (the guard, not the URL, refused them)', async () => {
    const open = await startTestRuntime({ overrides: { commands: { importAllowPrivate: true } } });
    try {
      const c = open.client.withToken(await open.token('alice'));
      const own = new URL(open.url!).port;
      const done = await finish(c, 'store', await launch(c, 'store', 'import', { url: `http://[::ffff:7f00:1]:${own}/metrics`, name: 'metrics.txt' }));
      expect(done.state).toBe('success');
    } finally {
      await open.close();
    }
  }, 120_000);
});
