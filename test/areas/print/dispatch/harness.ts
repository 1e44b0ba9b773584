import { Readable } from 'node:stream';
import { jobLog } from '../../../../src/areas/print/jobs/store/job-reads.js';
import type { PrintJobRow } from '../../../../src/areas/print/jobs/store/job-row.js';
import { submitPrintJob } from '../../../../src/areas/print/jobs/submit-print-job.js';
import { eventually, startTestRuntime, type TestRuntime, type TestRuntimeOptions } from '../../../helpers/runtime.js';

/**
 * The dispatch engine as the print-jobs area wires it, in a worker runtime
 * of its own (schema, queue prefix, data directory), with short retry and
 * timeout settings.
 */
export const FAST = { retryBaseMs: 200, retryMaxMs: 1000, connectTimeoutMs: 1000, idleTimeoutMs: 3000 };

export async function startDispatchRuntime(opts: TestRuntimeOptions = {}): Promise<TestRuntime> {
  return startTestRuntime({
    ...opts,
    parts: { api: false, workers: true },
    overrides: {
      printDispatch: FAST,
      queues: { reconcileIntervalMs: 60_000, concurrency: { default: 4, print: 32 } },
      ...opts.overrides,
    },
  });
}

export async function addPrinter(rt: TestRuntime, name: string, connection: string, extra: { paused?: boolean; flow?: string } = {}): Promise<void> {
  await rt.services.db.query('INSERT INTO printers (name, connection, paused, flow) VALUES ($1, $2, $3, $4)', [name, connection, extra.paused ?? false, extra.flow ?? null]);
}

export async function setPrinter(rt: TestRuntime, name: string, set: { paused?: boolean; redirect?: string | null; connection?: string }): Promise<void> {
  const db = rt.services.db;
  if (set.paused !== undefined) await db.query('UPDATE printers SET paused = $2 WHERE name = $1', [name, set.paused]);
  if (set.redirect !== undefined) await db.query('UPDATE printers SET redirect = $2 WHERE name = $1', [name, set.redirect]);
  if (set.connection !== undefined) await db.query('UPDATE printers SET connection = $2 WHERE name = $1', [name, set.connection]);
}

/** Wakes a printer's dispatch as the API's pause/resume/redirect operations do (an outbox entry). */
export async function wake(rt: TestRuntime, printer: string): Promise<void> {
  await rt.services.db.transaction((tx) => rt.services.outbox.add(tx, 'print.dispatch', { printer }));
}

export async function submit(rt: TestRuntime, printer: string, body: string | Buffer, opts: { priority?: number; flow?: string | null; name?: string; mimeType?: string } = {}): Promise<PrintJobRow> {
  const s = rt.services;
  return submitPrintJob({ db: s.db, blobs: s.blobs, outbox: s.outbox, maxBytes: 0, batch: s.config.print.submissions }, {
    printer, source: Readable.from([Buffer.from(body)]), mimeType: opts.mimeType ?? 'application/octet-stream',
    name: opts.name ?? 'doc', priority: opts.priority, flow: opts.flow, creator: 'tester',
  });
}

export async function jobs(rt: TestRuntime, ids: readonly string[]): Promise<PrintJobRow[]> {
  const { rows } = await rt.services.db.query<PrintJobRow>('SELECT * FROM print_jobs WHERE id = ANY($1::bigint[]) ORDER BY id', [ids]);
  return rows;
}

/** Waits until every job is in one of `states`. */
export async function until(rt: TestRuntime, ids: readonly string[], states: readonly string[], timeoutMs = 30_000): Promise<PrintJobRow[]> {
  return eventually(async () => {
    const rows = await jobs(rt, ids);
    return rows.every((r) => states.includes(r.status)) ? rows : undefined;
  }, timeoutMs, 50);
}

export const logText = async (rt: TestRuntime, id: string) => (await jobLog(rt.services.db, Number(id))).map((l) => l.text).join('\n');

/** Waits until a printer's wake-ups have been relayed and its dispatch run has ended (nothing queued or running for it). */
export async function settled(rt: TestRuntime, printer: string): Promise<void> {
  await eventually(async () => {
    const { rows } = await rt.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM outbox WHERE name = 'print.dispatch' AND data->>'printer' = $1`, [printer]);
    if (rows[0]!.n > 0) return undefined;
    return (await rt.services.queue.inspect('print.dispatch', { printer })).state === 'missing' ? true : undefined;
  }, 20_000, 50);
}
