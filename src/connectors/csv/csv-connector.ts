import path from 'node:path';
import { displayUrl } from '../../net/safe-fetch.js';
import type { Connector, ConnectorType, IntakeFacet } from '../connector.js';
import type { IntakePorts } from '../ports.js';
import { DirectorySource } from './directory-source.js';
import { isLeaseLost } from './import-file.js';
import { optionsSchema, type CsvImportOptions, type SourceOptions } from './options.js';
import { firstRun, nextRun, waitUntil } from './schedule.js';
import { UrlSource } from './url-source.js';

/** The state key of the last run's start (ISO time), shared by whichever process holds the lease. */
const LAST_RUN_KEY = 'schedule/last';
/** How often finished claims older than `keepDays` are deleted. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * Scheduled CSV / RList imports: on a cron pattern or an interval, each
 * source (a directory, or an http(s) URL) is read and every new file becomes
 * one task of a task service, through the same task creation the API uses.
 * Each file is imported once (claimed by name and content hash before its
 * task is created, with the task's id fixed in the claim). The schedule is
 * the intake's own timer, so it runs only in the process holding the
 * service's lease and one run never overlaps another; docs/design/csv-import.md
 * says why this is not a BullMQ job scheduler.
 */
export const csvConnectorType: ConnectorType = {
  type: 'csv',
  description: 'Scheduled CSV / RList imports: new files of a directory or an http(s) URL become tasks, each file once',
  examples: [{ sources: [{ directory: 'csv-example', task: { service: 'demo' } }], schedule: { everyMs: 60_000 }, stableMs: 100 }],
  create(ctx): Connector {
    const o = optionsSchema.parse(ctx.config.options);
    const uses = o.sources.map((s, i) => ({ sid: s.task.service, facet: 'tasks' as const, option: `sources.${i}.task.service` }));
    const allowPrivate = ctx.imports?.allowPrivate ?? false;
    return {
      sid: ctx.sid,
      type: 'csv',
      intake: csvIntake(ctx.sid, ctx.dataDir, o, allowPrivate),
      singleInstance: { leaseTtlMs: o.leaseTtlMs },
      uses,
    };
  },
};

/** The claims' `source` of a configured source: the directory's absolute path, or the URL without credentials. */
const keyOf = (dataDir: string, s: SourceOptions) => (s.directory !== undefined ? path.resolve(dataDir, s.directory) : displayUrl(new URL(s.url!)));

function csvIntake(sid: string, dataDir: string, o: CsvImportOptions, allowPrivate: boolean): IntakeFacet {
  let loop: Promise<void> | undefined;
  const keys = o.sources.map((s) => keyOf(dataDir, s));
  return {
    description: `scheduled import (${o.schedule.cron !== undefined ? `cron "${o.schedule.cron}"` : `every ${o.schedule.everyMs} ms`}) of ${keys.join(', ')}`,
    async start(ports: IntakePorts, signal: AbortSignal) {
      const creator = `csv:${sid}`;
      const sources = o.sources.map((source, i) => {
        const c = { sid, source, key: keys[i]!, ports, creator };
        return source.directory !== undefined
          ? new DirectorySource(c, o.stableMs)
          : new UrlSource(c, path.join(dataDir, '.csv-spool', sid), { allowPrivate, ...o.fetch });
      });
      // the directories (with done/ and error/) exist once the service runs; one that cannot be made is retried by each run
      for (const s of sources) if (s instanceof DirectorySource) await s.prepare();
      const last = await ports.state.get(LAST_RUN_KEY);
      const lastAt = last ? Date.parse((last.value as { at?: string }).at ?? '') : NaN;
      const due = firstRun(o.schedule, Number.isNaN(lastAt) ? undefined : lastAt, Date.now());
      if (signal.aborted) return;
      loop = runLoop(ports, signal, sources, due);
    },
    async stop() {
      await loop;
      loop = undefined;
    },
  };

  /**
   * The schedule: what a crash left is finished first, then runs one after
   * another (a run never overlaps the next: the next time is reckoned from
   * the start of the one that ended, and times missed meanwhile are skipped).
   */
  async function runLoop(ports: IntakePorts, signal: AbortSignal, sources: (DirectorySource | UrlSource)[], firstDue: number): Promise<void> {
    const log = ports.log;
    const guarded = async (what: string, fn: () => Promise<unknown>) => {
      try {
        await fn();
      } catch (err) {
        if (signal.aborted) return;
        if (isLeaseLost(err)) log.warn({ err }, 'csv import: lease lost; this process stops importing');
        else log.warn({ err, source: what }, 'csv import: run of this source failed; the next run tries again');
      }
    };
    let lastPrune = 0;
    for (const [i, s] of sources.entries()) await guarded(keys[i]!, () => s.resume());
    let due = firstDue;
    while (await waitUntil(due, signal)) {
      const started = Date.now();
      for (const [i, s] of sources.entries()) {
        if (signal.aborted) return;
        await guarded(keys[i]!, () => s.run(signal));
      }
      if (signal.aborted) return;
      await guarded('schedule', () => ports.state.put(LAST_RUN_KEY, { at: new Date(started).toISOString() }));
      if (Date.now() - lastPrune > PRUNE_EVERY_MS) {
        lastPrune = Date.now();
        await guarded('prune', async () => {
          const removed = await ports.claims.prune(o.keepDays);
          if (removed > 0) log.info({ removed }, 'csv import: old claims deleted');
        });
      }
      due = nextRun(o.schedule, started);
      if (due <= Date.now()) {
        log.warn({ tookMs: Date.now() - started }, 'csv import: a run took longer than the schedule allows; the times missed are skipped');
        due = nextRun(o.schedule, Date.now());
      }
    }
  }
}
