import { setTimeout as sleep } from 'node:timers/promises';
import { CronExpressionParser } from 'cron-parser';
import type { ScheduleOptions } from './options.js';

/** Longest single sleep: a timer longer than about 24.8 days overflows, so far runs are waited for in steps. */
const MAX_SLEEP_MS = 3_600_000;

/** The first run time strictly after `after` (epoch ms). */
export function nextRun(s: ScheduleOptions, after: number): number {
  if (s.everyMs !== undefined) return after + s.everyMs;
  return CronExpressionParser.parse(s.cron!, { currentDate: new Date(after), tz: s.tz }).next().getTime();
}

/**
 * When the first run of a start is due, from the last run recorded in the
 * service's state: a run missed while no process held the lease is made up
 * once at start (not once per missed time); with no run ever recorded an
 * interval runs at once and a cron pattern waits for its next time.
 */
export function firstRun(s: ScheduleOptions, lastRun: number | undefined, now: number): number {
  if (lastRun === undefined) return s.everyMs !== undefined ? now : nextRun(s, now);
  return Math.max(now, nextRun(s, lastRun));
}

/** Sleeps until `at` (epoch ms); false when `signal` aborted first. */
export async function waitUntil(at: number, signal: AbortSignal): Promise<boolean> {
  while (!signal.aborted) {
    const left = at - Date.now();
    if (left <= 0) return true;
    await sleep(Math.min(left, MAX_SLEEP_MS), undefined, { signal }).catch(() => {});
  }
  return false;
}
