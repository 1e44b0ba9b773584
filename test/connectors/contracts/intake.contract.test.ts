import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IntakeFacet } from '../../../src/connectors/connector.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { exampleInstances, openContractEnv } from './instances.js';

/**
 * The contract of the `intake` facet, run against every registered connector
 * type's examples that have one (real PostgreSQL and Redis behind the ports):
 * start resolves once it runs, an aborted signal plus `stop()` ends it within
 * seconds and nothing is written afterwards, it can start again after a stop,
 * and nothing rejects unobserved.
 */
const { instances, cleanup } = await exampleInstances('intake');
let env: Awaited<ReturnType<typeof openContractEnv>>;
const unhandled: unknown[] = [];
const onUnhandled = (err: unknown) => unhandled.push(err);
beforeAll(async () => {
  env = await openContractEnv();
  process.on('unhandledRejection', onUnhandled);
});
afterAll(async () => {
  process.off('unhandledRejection', onUnhandled);
  await env?.close();
  await cleanup();
});

/** A fingerprint of everything the service stored (keys and write times). */
const stateOf = async (db: Database, sid: string) =>
  JSON.stringify((await db.query('SELECT key, updated FROM connector_state WHERE sid = $1 ORDER BY key', [sid])).rows);

/** Runs for `ms`, then aborts and stops; returns how long stopping took. `ms` < 0: aborted before the start. */
async function runFor(intake: IntakeFacet, sid: string, ms: number): Promise<number> {
  const ctl = new AbortController();
  if (ms < 0) ctl.abort(new Error('contract: aborted before start'));
  await intake.start(env.ports(sid), ctl.signal);
  await new Promise((r) => setTimeout(r, ms));
  const t0 = Date.now();
  ctl.abort(new Error('contract: stop'));
  await intake.stop();
  return Date.now() - t0;
}

it('the mock intake takes part', () => {
  expect(instances.map((i) => i.connector.type)).toContain('mock');
});

for (const { label, connector } of instances) {
  describe(`intake facet: ${label}`, () => {
    const intake = connector.intake!;
    const sid = connector.sid;

    it('says what it watches', () => {
      expect(intake.description.trim().length).toBeGreaterThan(0);
    });

    it('runs until stopped, stops within seconds and writes nothing afterwards', async () => {
      expect(await runFor(intake, sid, 500)).toBeLessThan(5000);
      const after = await stateOf(env.db, sid);
      await new Promise((r) => setTimeout(r, 1000));
      expect(await stateOf(env.db, sid)).toBe(after);
    });

    it('starts again after a stop (a new lease); a signal aborted right away, or before the start, is honoured', async () => {
      expect(await runFor(intake, sid, 200)).toBeLessThan(5000);
      expect(await runFor(intake, sid, 0)).toBeLessThan(5000);
      expect(await runFor(intake, sid, -1)).toBeLessThan(5000);
      const after = await stateOf(env.db, sid);
      await new Promise((r) => setTimeout(r, 500));
      expect(await stateOf(env.db, sid)).toBe(after);
      expect(unhandled).toEqual([]);
    });
  });
}
