import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/blobs/blob-store.js';
import { ConfigError, loadConfig } from '../../src/config/load.js';
import { ConnectorRegistry } from '../../src/connectors/registry.js';
import { createLogger } from '../../src/logging/logger.js';
import { eventually, startTestRuntime, TEST_SERVICES, type TestRuntime } from '../helpers/runtime.js';

/**
 * The registry through the running service: capabilities in `GET /v1/services`
 * follow from the facets, and the running facets (intake) start in worker
 * processes only and release their lease when stopped.
 */
const demo = {
  type: 'mock',
  options: { heartbeat: { intervalMs: 100 }, singleInstance: true, leaseTtlMs: 1000, tasks: { itemMs: 10, actions: ['start', 'abort'] }, functions: true },
};
let all: TestRuntime;
let apiOnly: TestRuntime;
beforeAll(async () => {
  all = await startTestRuntime({ overrides: { services: { ...TEST_SERVICES, demo } } });
  // a second process on the same storage that serves HTTP only
  apiOnly = await startTestRuntime({ shareWith: all, parts: { api: true, workers: false }, overrides: { services: { ...TEST_SERVICES, demo } } });
}, 120_000);
afterAll(async () => {
  await apiOnly?.close();
  await all?.close();
});

const beatsBy = async (rt: TestRuntime) =>
  (await rt.services.db.query<{ value: { pid: number } }>(`SELECT value FROM connector_state WHERE sid = 'demo'`)).rows.map((r) => r.value.pid);

describe('capabilities follow from facets', () => {
  it('GET /v1/services shows each facet the connector has, and only those', async () => {
    const api = all.client.withToken(await all.token('u', ['user']));
    const res = await api.get('/v1/services/demo');
    expect(res.status).toBe(200);
    expect(res.body.capabilities).toEqual({ repository: false, commands: [], tasks: { actions: ['start', 'abort'] }, functions: true, intake: true });
    expect(res.body.links).toEqual({ self: { href: '/v1/services/demo' }, tasks: { href: '/v1/services/demo/tasks' }, functions: { href: '/v1/services/demo/function' } });
    const plain = (await api.get('/v1/services/mock')).body;
    expect(plain.capabilities).toEqual({ repository: false, commands: [], tasks: null, functions: false, intake: false });
    expect((await api.get('/v1/services/demo/repo')).body.code).toBe('NO_REPOSITORY');
  });

  it('bad facet options name the service and the option', async () => {
    const config = loadConfig({ env: {}, configDir: 'config', overrides: { services: { bad: { type: 'mock', options: { tasks: { actions: ['pause'] } } } } } });
    const blobs = new BlobStore(`${all.dataDir}/blobs`);
    await expect(ConnectorRegistry.create(config, blobs, createLogger('silent'))).rejects.toThrow(ConfigError);
    await expect(ConnectorRegistry.create(config, blobs, createLogger('silent'))).rejects.toThrow(/services\.bad\.options: tasks\.actions/);
  });
});

describe('running facets', () => {
  it('intake runs in the process with workers, never in the API-only one; stopping releases the lease', async () => {
    await eventually(async () => ((await beatsBy(all)).includes(process.pid) ? true : undefined));
    const lease = await all.services.db.query<{ holder: string }>(`SELECT holder FROM connector_leases WHERE name = 'service:demo'`);
    expect(lease.rows[0]!.holder).toBe(all.services.registry.holder);
    expect(apiOnly.services.registry.holder).not.toBe(all.services.registry.holder);
    await all.services.registry.stop();
    expect((await all.services.db.query(`SELECT 1 FROM connector_leases WHERE name = 'service:demo'`)).rowCount).toBe(0);
    const last = JSON.stringify((await all.services.db.query(`SELECT updated FROM connector_state WHERE sid = 'demo'`)).rows);
    // nothing beats any more: an API-only process with a runner would have taken the free lease within a third of its TTL
    await new Promise((r) => setTimeout(r, 2000));
    expect(JSON.stringify((await all.services.db.query(`SELECT updated FROM connector_state WHERE sid = 'demo'`)).rows)).toBe(last);
  });
});
