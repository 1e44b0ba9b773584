import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import type { Database } from '../../src/storage/driver/database.js';
import { createJobQueue, type JobQueue } from '../../src/queue/job-queue.js';
import { InvalidJobError, type JobName } from '../../src/queue/jobs.js';
import { createLogger } from '../../src/logging/logger.js';
import { createOutbox } from '../../src/outbox/outbox.js';
import { insertOutbox, outboxSize } from '../../src/outbox/outbox-store.js';
import { OutboxRelay } from '../../src/outbox/relay.js';
import { insertCommandStatement } from '../../src/areas/commands/command-store.js';
import { TEST_REDIS_URL, uniqueName } from '../helpers/env.js';
import { bothDrivers } from '../helpers/databases.js';
import { freePort } from '../helpers/process.js';
import { dropQueues, eventually } from '../helpers/runtime.js';
import { startRedisServer } from './redis-server.js';

/**
 * The outbox and its relay on both drivers, with real Redis: jobs committed
 * with their rows reach the queues within milliseconds, rolled-back ones never,
 * several relays share the rows without doubling any, and with Redis down
 * nothing waits and nothing is lost.
 */
const log = createLogger('silent');
const uuid = () => crypto.randomUUID();
// no local wake-up: these relays must be woken by the NOTIFY (or their first pass)
const outbox = createOutbox();

const drivers = bothDrivers({ migrate: true, poolSize: 6 });

/** A real queue that also counts what was handed to it (to prove no row is enqueued twice). */
function counting(queue: JobQueue, seen: Map<string, number>): JobQueue {
  return {
    ...queue,
    async enqueue(name, data, opts) {
      const id = await queue.enqueue(name, data, opts);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      return id;
    },
    async enqueueMany(jobs, opts) {
      const ids = await queue.enqueueMany(jobs, opts);
      for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
      return ids;
    },
  };
}

for (const [name, open] of drivers) {
  describe(`outbox relay on ${name}`, () => {
    let db: Database;
    let drop: () => Promise<void>;
    let redis: Redis;
    const prefix = uniqueName('ob');
    let queue: JobQueue;
    beforeAll(async () => {
      ({ db, drop } = await open());
      queue = createJobQueue({ url: TEST_REDIS_URL, prefix, log });
      redis = new Redis(TEST_REDIS_URL);
    });
    afterAll(async () => {
      await queue.close();
      redis.disconnect();
      await dropQueues(prefix);
      await drop();
    });
    const inRedis = async (queueName: string, jobId: string) => (await redis.exists(`${prefix}:${queueName}:${jobId}`)) === 1;

    it('a committed job reaches its queue within milliseconds (NOTIFY, not a poll); a rolled-back one never does', async () => {
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 }); // the sweep cannot be what moves it
      await relay.start();
      try {
        const kept = uuid();
        const dropped = uuid();
        await db.transaction((tx) => outbox.add(tx, 'command.run', { cid: dropped, sid: 'store' }).then(() => {
          throw new Error('roll back');
        })).catch(() => undefined);
        // the first job also opens the queue's connection; the second shows the steady path
        for (const cid of [uuid(), kept]) {
          const t0 = performance.now();
          await db.transaction((tx) => outbox.add(tx, 'command.run', { cid, sid: 'store' }));
          await eventually(async () => ((await inRedis('commands', `command.${cid}.run`)) ? true : undefined), 10_000, 1);
          const ms = performance.now() - t0;
          console.log(`${name}: commit to job in Redis ${ms.toFixed(1)} ms`);
          expect(ms).toBeLessThan(5000); // generous (loaded machine); typically a few ms
        }
        await relay.idle();
        expect(await outboxSize(db)).toBe(0);
        expect(await inRedis('commands', `command.${dropped}.run`)).toBe(false);
      } finally {
        await relay.stop();
      }
    });

    it('a row whose payload is invalid (written past the outbox) is dropped; the valid rows of its batch still reach their queue', async () => {
      const good = [uuid(), uuid()];
      const bad = uuid();
      await insertOutbox(db, 'command.run', `command.${good[0]}.run`, { cid: good[0], sid: 'store' }, null);
      await insertOutbox(db, 'command.run', `command.${bad}.run`, { cid: bad, sid: 'store', extra: 1 }, null);
      await insertOutbox(db, 'command.run', `command.${good[1]}.run`, { cid: good[1], sid: 'store' }, null);
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 });
      await relay.start();
      try {
        for (const cid of good) await eventually(async () => ((await inRedis('commands', `command.${cid}.run`)) ? true : undefined), 10_000, 5);
        await relay.idle();
        expect(await outboxSize(db)).toBe(0);
        expect(await inRedis('commands', `command.${bad}.run`)).toBe(false);
        expect(relay.takesRows).toBe(true); // not taken for a Redis failure: no back-off
      } finally {
        await relay.stop();
      }
    });

    it('add validates the payload and writes nothing when it is invalid; the same job twice is stored once', async () => {
      await expect(db.transaction((tx) => outbox.add(tx, 'command.run', { cid: 'not-a-uuid', sid: 'store' }))).rejects.toBeInstanceOf(InvalidJobError);
      const cid = uuid();
      const ids = await db.transaction(async (tx) => [
        await outbox.add(tx, 'command.run', { cid, sid: 'store' }),
        await outbox.add(tx, 'command.run', { cid, sid: 'store' }),
      ]);
      expect(ids).toEqual([`command.${cid}.run`, `command.${cid}.run`]);
      expect(await outboxSize(db)).toBe(1);
      // written while no relay ran: the first pass of a starting relay moves it
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 });
      await relay.start();
      try {
        await eventually(async () => ((await outboxSize(db)) === 0 ? true : undefined), 10_000, 10);
        expect(await inRedis('commands', `command.${cid}.run`)).toBe(true);
      } finally {
        await relay.stop();
      }
    });

    it('addMany stores a batch in one statement (a job there already once), validates every payload first, and the local relay takes the batch', async () => {
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 });
      const local = createOutbox(relay);
      await relay.start();
      try {
        const cids = Array.from({ length: 50 }, () => uuid());
        const jobs = cids.map((cid) => ({ name: 'command.run' as const, data: { cid, sid: 'store' } }));
        await expect(db.transaction((tx) => local.addMany(tx, [...jobs, { name: 'command.run' as const, data: { cid: 'not-a-uuid', sid: 'store' } }])))
          .rejects.toBeInstanceOf(InvalidJobError);
        expect(await outboxSize(db)).toBe(0);
        const ids = await db.transaction((tx) => local.addMany(tx, [...jobs, jobs[0]!]));
        expect(ids).toHaveLength(51);
        expect(new Set(ids).size).toBe(50);
        for (const cid of cids) await eventually(async () => ((await inRedis('commands', `command.${cid}.run`)) ? true : undefined), 10_000, 5);
        await relay.idle();
        expect(await outboxSize(db)).toBe(0);
      } finally {
        await relay.stop();
      }
    });

    it('addWith writes the statement and its job together or not at all, in one autocommitted statement, and the local relay takes the job', async () => {
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 });
      const local = createOutbox(relay);
      await relay.start();
      try {
        const cid = uuid();
        const rows = await local.addWith<'command.run', { cid: string }>(db, insertCommandStatement({ cid, sid: 'store', command: 'delete', parameters: {}, creator: 'u' }, 60), 'command.run', { cid, sid: 'store' });
        expect(rows).toEqual([{ cid }]); // the statement's RETURNING list, without the outbox's column
        expect((await db.query('SELECT state FROM commands WHERE cid = $1', [cid])).rows).toEqual([{ state: 'queued' }]);
        await eventually(async () => ((await inRedis('commands', `command.${cid}.run`)) ? true : undefined), 10_000, 1);
        await relay.idle();
        expect(await outboxSize(db)).toBe(0);
        // the same cid again: the INSERT fails, so its (new) job is not written either
        const before = await outboxSize(db);
        const other = { text: `INSERT INTO commands (cid, sid, command, state, expires) VALUES ($1, 'store', 'delete', 'queued', now()) RETURNING cid`, params: [cid] };
        await expect(local.addWith(db, other, 'preview.render', { sid: 'store', uuid: uuid(), version: 'x' })).rejects.toThrow();
        expect(await outboxSize(db)).toBe(before);
        // a statement that changes no row stores no job
        const none = { text: `UPDATE commands SET state = 'running' WHERE cid = $1 RETURNING cid`, params: [uuid()] };
        expect(await local.addWith(db, none, 'preview.render', { sid: 'store', uuid: uuid(), version: 'y' })).toEqual([]);
        expect(await outboxSize(db)).toBe(before);
        // an invalid payload: nothing written, the statement not run
        const fresh = uuid();
        await expect(local.addWith(db, insertCommandStatement({ cid: fresh, sid: 'store', command: 'delete', parameters: {}, creator: 'u' }, 60), 'command.run', { cid: 'not-a-uuid', sid: 'store' })).rejects.toBeInstanceOf(InvalidJobError);
        const { rows: found } = await db.query('SELECT 1 FROM commands WHERE cid = $1', [fresh]);
        expect(found).toHaveLength(0);
      } finally {
        await relay.stop();
      }
    });

    it("this process's relay takes its committed rows at once (claimed at insert: no NOTIFY, no claim round trip)", async () => {
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 60_000 });
      const local = createOutbox(relay);
      let notified = 0;
      const stopListening = await db.listen('wcr_outbox', () => notified++);
      await relay.start();
      try {
        const rolledBack = uuid();
        await db.transaction(async (tx) => {
          await local.add(tx, 'command.run', { cid: rolledBack, sid: 'store' });
          throw new Error('roll back');
        }).catch(() => undefined);
        for (const cid of [uuid(), uuid()]) {
          const t0 = performance.now();
          await db.transaction((tx) => local.add(tx, 'command.run', { cid, sid: 'store' }));
          await eventually(async () => ((await inRedis('commands', `command.${cid}.run`)) ? true : undefined), 10_000, 1);
          console.log(`${name}: commit to job in Redis, taken locally ${(performance.now() - t0).toFixed(1)} ms`);
        }
        await relay.idle();
        expect(await outboxSize(db)).toBe(0);
        expect(notified).toBe(0);
        expect(await inRedis('commands', `command.${rolledBack}.run`)).toBe(false);
      } finally {
        await stopListening();
        await relay.stop();
      }
    });

    it('a row claimed by a process that died is taken by another relay once the claim lapses', async () => {
      const cid = uuid();
      await insertOutbox(db, 'command.run', `command.${cid}.run`, { cid, sid: 'store' }, 1); // claimed, never taken
      const relay = new OutboxRelay(db, queue, log, { sweepMs: 300 });
      await relay.start();
      try {
        await relay.idle();
        expect(await outboxSize(db)).toBe(1); // still claimed
        await eventually(async () => ((await outboxSize(db)) === 0 ? true : undefined), 20_000, 50);
        expect(await inRedis('commands', `command.${cid}.run`)).toBe(true);
      } finally {
        await relay.stop();
      }
    });

    it('two relays share 300 rows: every job is enqueued exactly once', async () => {
      const seen = new Map<string, number>();
      const a = new OutboxRelay(db, counting(queue, seen), log, { batch: 20, sweepMs: 60_000 });
      const b = new OutboxRelay(db, counting(queue, seen), log, { batch: 20, sweepMs: 60_000 });
      await a.start();
      await b.start();
      try {
        const versions = Array.from({ length: 300 }, (_, i) => ({ sid: 'store', uuid: uuid(), version: `v${i}` }));
        // in several transactions, so both relays are woken while the other works
        for (let i = 0; i < 300; i += 30) {
          await db.transaction(async (tx) => {
            for (const v of versions.slice(i, i + 30)) await outbox.add(tx, 'preview.render', v);
          });
        }
        await eventually(async () => ((await outboxSize(db)) === 0 ? true : undefined), 60_000, 20);
        await a.idle();
        await b.idle();
        expect(seen.size).toBe(300);
        expect([...seen.values()].every((n) => n === 1)).toBe(true);
      } finally {
        await a.stop();
        await b.stop();
      }
    });

    it('Redis unreachable: adds and their transactions do not wait, the relay fails fast and backs off; once Redis starts, every job is moved', async () => {
      const port = await freePort();
      const downPrefix = uniqueName('ob');
      const down = createJobQueue({ url: `redis://127.0.0.1:${port}`, prefix: downPrefix, log });
      const relay = new OutboxRelay(db, down, log, { enqueueTimeoutMs: 300, maxBackoffMs: 500, sweepMs: 60_000 });
      await relay.start();
      let server: Awaited<ReturnType<typeof startRedisServer>> | undefined;
      try {
        const jobs: { name: JobName; cid: string }[] = [];
        for (let i = 0; i < 20; i++) {
          const cid = uuid();
          const t0 = performance.now();
          await db.transaction((tx) => outbox.add(tx, 'command.run', { cid, sid: 'store' }));
          expect(performance.now() - t0).toBeLessThan(1000);
          jobs.push({ name: 'command.run', cid });
        }
        // the relay's rounds end (probe failed) instead of hanging on Redis
        const t1 = performance.now();
        await relay.idle();
        expect(performance.now() - t1).toBeLessThan(5000);
        expect(await outboxSize(db)).toBe(20);
        server = await startRedisServer(port);
        await eventually(async () => ((await outboxSize(db)) === 0 ? true : undefined), 60_000, 50);
        const r = new Redis(server.url);
        try {
          for (const j of jobs) expect(await r.exists(`${downPrefix}:commands:command.${j.cid}.run`)).toBe(1);
        } finally {
          r.disconnect();
        }
      } finally {
        await relay.stop();
        await down.close();
        await server?.stop();
      }
    });
  });
}
