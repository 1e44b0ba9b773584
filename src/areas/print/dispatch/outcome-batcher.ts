import type { Sql } from '../../../storage/driver/database.js';
import { MicroBatcher } from '../../../storage/micro-batcher.js';
import { deliveredAndNext, deliveredAndNextMany, type Delivered, type DeliveredAndNext } from '../jobs/store/job-store.js';

/** How far the outcome statements of one process are gathered (config `printDispatch.outcomes`). */
export interface OutcomeBatching {
  /** Outcome statements running at once; requests that come in meanwhile wait for the next. */
  maxInFlight: number;
  /** Printers in one statement at most. */
  maxBatch: number;
}

/**
 * Coalesces the printers' "delivered, hand off the next" statements of one
 * process (a `MicroBatcher`): a run whose job the device acknowledged asks
 * for its outcome and next hand-off here; while `maxInFlight` such
 * statements are running, the requests that come in wait and then go
 * together as one statement (`deliveredAndNextMany`), at most one per
 * printer and `maxBatch` in all. A lone request goes on its own
 * (`deliveredAndNext`) at the end of the event loop's turn (`gatherTurn`:
 * with the acknowledgements of the same turn), so an idle engine adds no
 * delay. Every hand-off in a batch is committed before any of its runs
 * sends a byte, exactly as with one statement per job.
 */
export class OutcomeBatcher {
  private readonly batcher: MicroBatcher<Delivered, DeliveredAndNext>;

  constructor(sql: Sql, { maxInFlight, maxBatch }: OutcomeBatching) {
    this.batcher = new MicroBatcher<Delivered, DeliveredAndNext>({
      many: (items) => deliveredAndNextMany(sql, items),
      one: (d) => deliveredAndNext(sql, d.job, d.message, d.touchPrinter),
      // two runs of one printer take turns, as they do under its lock
      key: (d) => d.job.printer,
    }, maxInFlight, maxBatch, { gatherTurn: true });
  }

  /** The outcome of `item` recorded and the printer's next job handed off (or not: `next` undefined). */
  deliveredAndNext(item: Delivered): Promise<DeliveredAndNext> {
    return this.batcher.run(item);
  }
}
