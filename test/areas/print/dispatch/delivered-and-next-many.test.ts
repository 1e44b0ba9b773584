import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PrintJobRow } from '../../../../src/areas/print/jobs/store/job-row.js';
import { deliveredAndNextMany } from '../../../../src/areas/print/jobs/store/job-store.js';
import { createOutbox } from '../../../../src/outbox/outbox.js';
import { claimNext, type NextStep } from '../../../../src/areas/print/dispatch/claim.js';
import { OutcomeBatcher } from '../../../../src/areas/print/dispatch/outcome-batcher.js';
import type { Database } from '../../../../src/storage/driver/database.js';
import { bothDrivers, type TestDatabase } from '../../../helpers/databases.js';
import { explainGenericPlan, lastStatement } from '../../../helpers/generic-plan.js';

/**
 * The outcome-and-next statement for several printers at once (the engine's
 * busy path, OutcomeBatcher): per printer the same outcome, guard and
 * hand-off as one printer's statement, in priority-then-FIFO order, never a
 * job handed off twice; on both drivers.
 */
const outbox = createOutbox();

async function addJobs(db: Database, printer: string, priorities: number[]): Promise<string[]> {
  const ids: string[] = [];
  for (const [n, priority] of priorities.entries()) {
    const { rows } = await db.query<{ id: string }>(
      `INSERT INTO print_jobs (status, printer, name, mime_type, size, blob_sha256, priority)
       VALUES ('waitprocessing', $1, $2, 'text/plain', 1, repeat('a', 64), $3) RETURNING id`, [printer, `${printer} ${n}`, priority]);
    ids.push(String(rows[0]!.id));
  }
  return ids;
}

const claim = async (db: Database, printer: string): Promise<PrintJobRow> => {
  const step: NextStep = await db.transaction((tx) => claimNext(tx, outbox, printer));
  if (step.kind !== 'deliver') throw new Error(`nothing handed off on ${printer}: ${step.kind}`);
  return step.job;
};
const handedOff = (r: { next?: NextStep }) => (r.next?.kind === 'deliver' ? r.next.job : undefined);

for (const [driver, open] of bothDrivers()) {
  describe(`deliveredAndNextMany on ${driver}`, { timeout: 60_000 }, () => {
    let t: TestDatabase;
    beforeEach(async () => {
      t = await open();
      for (const name of ['a', 'b', 'c']) await t.db.query('INSERT INTO printers (name, connection) VALUES ($1, $2)', [name, `socket://127.0.0.1:9`]);
    });
    afterEach(async () => {
      await t?.drop();
    });

    it('records each outcome and hands off each printer\'s next job in priority, then FIFO order', async () => {
      const a = await addJobs(t.db, 'a', [50, 90, 50, 10]);
      const b = await addJobs(t.db, 'b', [10, 10]);
      let inFlight = [await claim(t.db, 'a'), await claim(t.db, 'b')];
      expect(inFlight.map((j) => String(j.id))).toEqual([a[1], b[0]]);
      const order: string[] = inFlight.map((j) => String(j.id));
      while (inFlight.length > 0) {
        const results = await deliveredAndNextMany(t.db, inFlight.map((job) => ({ job, message: 'ok', touchPrinter: true })));
        expect(results.every((r) => r.delivered)).toBe(true);
        // drained: nothing was waiting, so nothing was handed off (the run ends without asking why)
        for (const r of results) expect(r.drained).toBe(r.next === undefined);
        inFlight = results.flatMap((r) => handedOff(r) ?? []);
        order.push(...inFlight.map((j) => String(j.id)));
      }
      expect(order).toEqual([a[1], b[0], a[0], b[1], a[2], a[3]]);
      const { rows } = await t.db.query<{ status: string; n: number }>('SELECT status, count(*)::int AS n FROM print_jobs GROUP BY status');
      expect(rows).toEqual([{ status: 'processed', n: 6 }]);
      const { rows: logs } = await t.db.query<{ text: string }>('SELECT text FROM print_logs WHERE job_id = $1 ORDER BY id', [a[0]]);
      expect(logs.map((l) => l.text)).toEqual(['waitprocessing -> processing: handed to socket://127.0.0.1:9', 'delivered: ok']);
      const { rows: printers } = await t.db.query<{ last_printed: Date | null }>('SELECT last_printed FROM printers WHERE name IN (\'a\', \'b\')');
      expect(printers.every((p) => p.last_printed !== null)).toBe(true);
    });

    it('a job changed meanwhile is not delivered; a held printer hands nothing off; the others go on', async () => {
      await addJobs(t.db, 'a', [50, 50]);
      await addJobs(t.db, 'b', [50, 50]);
      await addJobs(t.db, 'c', [50, 50]);
      const [ja, jb, jc] = [await claim(t.db, 'a'), await claim(t.db, 'b'), await claim(t.db, 'c')];
      // an operator ended a's job; b was paused
      await t.db.query(`UPDATE print_jobs SET status = 'error', handoff_at = NULL WHERE id = $1`, [ja.id]);
      await t.db.query('UPDATE printers SET paused = true WHERE name = $1', ['b']);
      const [ra, rb, rc] = await deliveredAndNextMany(t.db, [ja, jb, jc].map((job) => ({ job, message: 'ok', touchPrinter: false })));
      expect(ra!.delivered).toBe(false);
      expect(handedOff(ra!)?.printer).toBe('a');
      expect(rb!.delivered).toBe(true);
      expect(rb!.next).toBeUndefined();
      expect(rb!.drained).toBe(false); // held, not empty: the run asks why step by step
      expect(rc!.delivered).toBe(true);
      expect(handedOff(rc!)?.printer).toBe('c');
      // the same outcome again: the guard refuses it (never processed twice)
      const [again] = await deliveredAndNextMany(t.db, [{ job: jc, message: 'ok', touchPrinter: false }, { job: jb, message: 'ok', touchPrinter: false }]);
      expect(again!.delivered).toBe(false);
      expect(again!.next).toBeUndefined(); // c's next job is in flight already
    });

    it('refuses two entries for one printer', async () => {
      await addJobs(t.db, 'a', [50]);
      const job = await claim(t.db, 'a');
      await expect(deliveredAndNextMany(t.db, [{ job, message: 'x', touchPrinter: false }, { job, message: 'y', touchPrinter: false }])).rejects.toThrow(/one entry per printer/);
    });

    it('OutcomeBatcher: requests that come together share statements, one per printer each, and every job is delivered once', async () => {
      const names = ['a', 'b', 'c'];
      for (const name of names) await addJobs(t.db, name, [50, 50, 50, 50, 50]);
      const batcher = new OutcomeBatcher(t.db, { maxInFlight: 1, maxBatch: 64 });
      const seen: string[] = [];
      await Promise.all(names.map(async (name) => {
        let job: PrintJobRow | undefined = await claim(t.db, name);
        while (job) {
          seen.push(String(job.id));
          const r = await batcher.deliveredAndNext({ job, message: 'ok', touchPrinter: false });
          expect(r.delivered).toBe(true);
          job = handedOff(r);
        }
      }));
      expect(new Set(seen).size).toBe(15);
      const { rows } = await t.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM print_jobs WHERE status = 'processed'`);
      expect(rows[0]!.n).toBe(15);
    });

    it('its generic plan reads the outcome\'s jobs through an index, even when planned on a small table', async () => {
      // a generic plan made while print_jobs was small is kept until the next ANALYZE: a sequential
      // scan in it read the whole table at every outcome once the table had grown (docs/benchmarks.md#print-dispatch);
      // the outcome's jobs are read by primary key, never through the status indexes (docs/architecture.md)
      await addJobs(t.db, 'a', [10, 10]);
      await addJobs(t.db, 'b', [10, 10]);
      // a few pages of jobs (on one page a sequential scan is the cheapest plan there is)
      await t.db.query(`INSERT INTO print_jobs (status, printer, name, mime_type, size, blob_sha256, priority)
        SELECT 'processed', 'c', 'old ' || i, 'text/plain', 1, repeat('a', 64), 10 FROM generate_series(1, 300) i`);
      const inFlight = [await claim(t.db, 'a'), await claim(t.db, 'b')];
      const sent = await lastStatement(t.db, (sql) => deliveredAndNextMany(sql, inFlight.map((job) => ({ job, message: 'ok', touchPrinter: true }))));
      const plan = await explainGenericPlan(t.db, sent);
      expect(plan).not.toMatch(/Seq Scan on print_jobs/);
      // the outcome's part (CTE u, up to its log lines): by primary key (an index or a bitmap scan of it)
      const outcome = plan.slice(plan.indexOf('CTE u\n'), plan.indexOf('CTE ul\n'));
      expect(outcome).toContain('Update on print_jobs j');
      expect(outcome).toContain('print_jobs_pkey');
      expect(outcome).not.toMatch(/print_jobs_(status|printer|dispatch)/);
    });
  });
}
