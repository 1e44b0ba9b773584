import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Connector, IntakeFacet, WorkPort } from '../../../src/connectors/connector.js';
import { IntakeRunner } from '../../../src/connectors/lifecycle/intake-runner.js';
import { Lease, LeaseLostError, newHolderId } from '../../../src/connectors/lifecycle/lease.js';
import { intakeFileStore } from '../../../src/connectors/lifecycle/intake-file-store.js';
import { stateStore } from '../../../src/connectors/lifecycle/state-store.js';
import { heartbeatIntake } from '../../../src/connectors/mock/mock-intake.js';
import { outboxPort } from '../../../src/connectors/ports.js';
import { createOutbox } from '../../../src/outbox/outbox.js';
import { createLogger } from '../../../src/logging/logger.js';
import type { Database } from '../../../src/storage/driver/database.js';
import { openPglite } from '../../../src/storage/driver/pglite.js';
import { openPostgres } from '../../../src/storage/driver/postgres.js';
import { migrate } from '../../../src/storage/migrate.js';
import { dropSchema } from '../../helpers/databases.js';
import { TEST_DATABASE_URL, uniqueName } from '../../helpers/env.js';
import { eventually } from '../../helpers/runtime.js';

/** The lease and the intake runner against real PostgreSQL (and PGlite, where the lease is trivially held). */
const schema = uniqueName('lease');
const log = createLogger('silent');
const opened: Database[] = [];
let db: Database;
const open = async () => {
  const d = await openPostgres({ url: TEST_DATABASE_URL, schema, poolSize: 2 });
  opened.push(d);
  return d;
};

beforeAll(async () => {
  db = await open();
  await migrate(db);
});
afterAll(async () => {
  for (const d of opened) await d.close().catch(() => {});
  await dropSchema(schema);
});

const holderOf = async (name: string) =>
  (await db.query<{ holder: string }>('SELECT holder FROM connector_leases WHERE name = $1', [name])).rows[0]?.holder;

describe('Lease', () => {
  it('one holder at a time; a released lease is free at once, an unrenewed one after its TTL', async () => {
    const a = new Lease(db, 'l1', newHolderId(), 1000, log);
    const b = new Lease(db, 'l1', newHolderId(), 1000, log);
    expect(a.holder).not.toBe(b.holder);
    expect(await a.acquire()).toBe(true);
    expect(await b.acquire()).toBe(false);
    await a.release();
    expect(await b.acquire()).toBe(true);
    expect(await holderOf('l1')).toBe(b.holder);
    // b never renews (as if its process died): a gets it once the TTL has passed, not before
    const started = Date.now();
    expect(await a.acquire()).toBe(false);
    await eventually(async () => ((await a.acquire()) ? true : undefined), 10_000, 50);
    expect(Date.now() - started).toBeGreaterThanOrEqual(800);
    expect(await holderOf('l1')).toBe(a.holder);
    await a.release();
  });

  it('a held lease stays held past many TTLs', async () => {
    const a = new Lease(db, 'l2', newHolderId(), 1000, log);
    const b = new Lease(db, 'l2', newHolderId(), 1000, log);
    expect(await a.acquire()).toBe(true);
    let lost = false;
    a.hold(() => (lost = true));
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 500));
      expect(await b.acquire()).toBe(false);
    }
    expect(lost).toBe(false);
    await a.release();
    expect(await holderOf('l2')).toBeUndefined();
  });

  it('reports the loss when another process took the lease', async () => {
    const a = new Lease(db, 'l3', newHolderId(), 1500, log);
    expect(await a.acquire()).toBe(true);
    const lost = new Promise<Error>((resolve) => a.hold(resolve));
    await db.query(`UPDATE connector_leases SET holder = 'thief', expires = now() + interval '1 hour' WHERE name = 'l3'`);
    expect(await lost).toBeInstanceOf(LeaseLostError);
    await a.release(); // no longer ours: the thief's row stays
    expect(await holderOf('l3')).toBe('thief');
  });

  it('gives up before the TTL ends when it cannot renew (database gone)', async () => {
    const own = await open();
    const a = new Lease(own, 'l4', newHolderId(), 1500, log);
    expect(await a.acquire()).toBe(true);
    const started = Date.now();
    const lost = new Promise<Error>((resolve) => a.hold(resolve));
    await own.close();
    expect(await lost).toBeInstanceOf(LeaseLostError);
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it('release deletes its row even after a late renewal counted it lost (a stopped runner leaves no lease behind)', async () => {
    // renewals stall (a loaded machine): the watchdog counts the lease lost while the row still names this holder
    let stall = false;
    const slow = new Proxy(db, {
      get(target, prop) {
        if (prop === 'query') {
          return (text: string, params?: unknown[]) => (stall && text.startsWith('UPDATE connector_leases')
            ? new Promise(() => {}) : target.query(text, params));
        }
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as Database;
    const holder = newHolderId();
    const a = new Lease(slow, 'l5', holder, 600, log);
    expect(await a.acquire()).toBe(true);
    stall = true;
    expect(await new Promise<Error>((resolve) => a.hold(resolve))).toBeInstanceOf(LeaseLostError);
    expect(await holderOf('l5')).toBe(holder);
    await a.release();
    expect(await holderOf('l5')).toBeUndefined();
    // and never someone else's: a lease taken over meanwhile stays its new holder's
    const b = new Lease(db, 'l6', newHolderId(), 600, log);
    const c = new Lease(db, 'l6', newHolderId(), 600, log);
    expect(await b.acquire()).toBe(true);
    await db.query(`UPDATE connector_leases SET expires = now() - interval '1 second' WHERE name = 'l6'`);
    expect(await c.acquire()).toBe(true);
    await b.release();
    expect(await holderOf('l6')).toBe(c.holder);
  });
});

/** A mock intake behind the runner, with ports on the given database. */
function runner(d: Database, sid: string, intake: IntakeFacet, leaseTtlMs = 1500) {
  const connector: Connector & { intake: IntakeFacet } = { sid, type: 'mock', intake, singleInstance: { leaseTtlMs } };
  const ports = {
    log, outbox: outboxPort(createOutbox(), d), state: stateStore(d, sid), claims: intakeFileStore(d, sid),
    work: {} as WorkPort, // the heartbeat intake works on no other service
    metrics: { taken: () => {}, failed: () => {} },
    messages: { post: async () => {} },
  };
  return new IntakeRunner(connector, { db: d, ports, holder: newHolderId(), log, retryMs: 200 });
}

const lastBeat = async (d: Database, sid: string) =>
  (await d.query<{ updated: Date }>('SELECT max(updated) AS updated FROM connector_state WHERE sid = $1', [sid])).rows[0]?.updated?.getTime() ?? 0;

describe('IntakeRunner', () => {
  it('stops the intake when the lease is lost and starts it again once the lease is free', async () => {
    const r = runner(db, 'run1', heartbeatIntake(50));
    r.start();
    await eventually(async () => ((await lastBeat(db, 'run1')) > 0 ? true : undefined));
    await db.query(`UPDATE connector_leases SET holder = 'thief', expires = now() + interval '1 hour' WHERE name = 'service:run1'`);
    // within a renewal period the runner notices; then no more beats
    await new Promise((r) => setTimeout(r, 1500));
    const stopped = await lastBeat(db, 'run1');
    await new Promise((r) => setTimeout(r, 700));
    expect(await lastBeat(db, 'run1')).toBe(stopped);
    await db.query(`DELETE FROM connector_leases WHERE name = 'service:run1'`);
    await eventually(async () => ((await lastBeat(db, 'run1')) > stopped ? true : undefined));
    await r.stop();
    expect(await holderOf('service:run1')).toBeUndefined();
  });

  it('a start that fails is retried; the process keeps running', async () => {
    let calls = 0;
    const inner = heartbeatIntake(50);
    const flaky: IntakeFacet = {
      description: 'fails twice',
      start: async (ports, signal) => {
        calls += 1;
        if (calls <= 2) throw new Error('device not ready');
        await inner.start(ports, signal);
      },
      stop: () => inner.stop(),
    };
    const r = runner(db, 'run2', flaky);
    r.start();
    await eventually(async () => ((await lastBeat(db, 'run2')) > 0 ? true : undefined));
    expect(calls).toBe(3);
    await r.stop();
  });

  it('on PGlite (one process) the lease is trivially held', async () => {
    const lite = await openPglite({ schema: 'public' }); // in memory
    try {
      await migrate(lite);
      // a row naming another holder does not matter: no lease is taken at all
      await lite.query(`INSERT INTO connector_leases (name, holder, expires) VALUES ('service:lite', 'other', now() + interval '1 hour')`);
      const r = runner(lite, 'lite', heartbeatIntake(50));
      r.start();
      await eventually(async () => ((await lastBeat(lite, 'lite')) > 0 ? true : undefined));
      await r.stop();
    } finally {
      await lite.close();
    }
  }, 120_000);
});
