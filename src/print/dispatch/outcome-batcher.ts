import type { Sql } from '../../storage/driver/database.js';
import { deliveredAndNext, deliveredAndNextMany, type Delivered, type NextStep } from './dispatch-store.js';

type Result = { delivered: boolean; next?: NextStep };
interface Waiting {
  item: Delivered;
  resolve(r: Result): void;
  reject(err: unknown): void;
}

/**
 * Coalesces the printers' "delivered, hand off the next" statements of one
 * process: a run whose job the device acknowledged asks for its outcome and
 * next hand-off here; while `maxInFlight` such statements are running, the
 * requests that come in wait and then go together as one statement
 * (`deliveredAndNextMany`), at most one per printer and `maxBatch` in all.
 * A lone request goes at once on its own (`deliveredAndNext`), so an idle
 * engine adds no delay; a busy one pays one round trip, one executor start
 * and one synchronous commit per batch instead of per job. Every hand-off
 * in a batch is committed before any of its runs sends a byte, exactly as
 * with one statement per job.
 */
export class OutcomeBatcher {
  private waiting: Waiting[] = [];
  private inFlight = 0;

  constructor(
    private readonly sql: Sql,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 64,
  ) {}

  /** The outcome of `item` recorded and the printer's next job handed off (or not: `next` undefined). */
  deliveredAndNext(item: Delivered): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      // one entry per printer per statement (two runs of one printer take turns, as they do under its lock)
      const batch: Waiting[] = [];
      const rest: Waiting[] = [];
      const printers = new Set<string>();
      for (const w of this.waiting) {
        if (batch.length < this.maxBatch && !printers.has(w.item.job.printer)) {
          printers.add(w.item.job.printer);
          batch.push(w);
        } else {
          rest.push(w);
        }
      }
      this.waiting = rest;
      this.inFlight++;
      const run: Promise<Result[]> = batch.length === 1
        ? deliveredAndNext(this.sql, batch[0]!.item.job, batch[0]!.item.message, batch[0]!.item.touchPrinter).then((r) => [r])
        : deliveredAndNextMany(this.sql, batch.map((w) => w.item));
      void run
        .then((results) => batch.forEach((w, i) => w.resolve(results[i]!)), (err: unknown) => batch.forEach((w) => w.reject(err)))
        .finally(() => {
          this.inFlight--;
          this.pump();
        });
    }
  }
}
