/**
 * How a `MicroBatcher` runs its requests: `many` runs several as one
 * statement (answers in the order of its input), `one` a lone request (by
 * default `many` of one), and `key` names what two requests of one
 * statement must not share (a printer, a task): requests with the same key
 * go in different statements, in the order they came.
 */
export interface BatchOps<I, R> {
  many(items: readonly I[]): Promise<R[]>;
  one?(item: I): Promise<R>;
  key?(item: I): string;
}

interface Waiting<I, R> {
  item: I;
  resolve(r: R): void;
  reject(err: unknown): void;
}

/**
 * Coalesces one kind of statement of one process across its concurrent
 * callers (jobs, requests). While `maxInFlight` statements of the kind are
 * running, the requests that come in wait and then go together as one
 * statement (at most `maxBatch`, one per key); a lone request goes at once on
 * its own (with `gatherTurn`, at the end of the event loop's turn), so an
 * idle process adds no delay, and a busy one pays one round
 * trip, one executor start and one synchronous commit per batch instead of
 * per request. Each request keeps its own guards inside the statement
 * (`many` answers per request). When a statement of several fails, each of
 * its requests is tried once more on its own (the failed statement changed
 * nothing), so one request's failure is not its neighbours'.
 * The print dispatch's outcomes (`OutcomeBatcher`), the print submissions
 * (`submit-print-job.ts`) and the task items' chunk reads and final reports
 * use it.
 */
export class MicroBatcher<I, R> {
  private waiting: Waiting<I, R>[] = [];
  private inFlight = 0;

  private gathering = false;

  /**
   * `gatherTurn`: a request that finds no statement in flight does not go at
   * once but at the end of the event loop's turn (`setImmediate`), with the
   * requests that the same turn's I/O callbacks made (answers of the previous
   * statement, devices' acknowledgements): microseconds of delay, where
   * otherwise the first of them went alone and the others waited a whole
   * statement for the next one.
   */
  constructor(
    private readonly ops: BatchOps<I, R>,
    private readonly maxInFlight = 2,
    private readonly maxBatch = 64,
    private readonly opts: { gatherTurn?: boolean } = {},
  ) {}

  /** `item`'s answer, from a statement of its own or shared with others that came at about the same time. */
  run(item: I): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.opts.gatherTurn && this.inFlight === 0) this.pumpAtEndOfTurn();
      else this.pump();
    });
  }

  private pumpAtEndOfTurn(): void {
    if (this.gathering) return;
    this.gathering = true;
    setImmediate(() => {
      this.gathering = false;
      this.pump();
    });
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.waiting.length > 0) {
      const batch: Waiting<I, R>[] = [];
      const rest: Waiting<I, R>[] = [];
      const keys = new Set<string>();
      for (const w of this.waiting) {
        const key = this.ops.key?.(w.item);
        if (batch.length < this.maxBatch && (key === undefined || !keys.has(key))) {
          if (key !== undefined) keys.add(key);
          batch.push(w);
        } else {
          rest.push(w);
        }
      }
      this.waiting = rest;
      this.inFlight++;
      void this.settle(batch).finally(() => {
        this.inFlight--;
        this.pump();
      });
    }
  }

  private async settle(batch: readonly Waiting<I, R>[]): Promise<void> {
    if (batch.length === 1) {
      const [w] = batch;
      return this.single(w!.item).then(w!.resolve, w!.reject);
    }
    let results: R[];
    try {
      results = await this.ops.many(batch.map((w) => w.item));
    } catch {
      // one request's failure must not be its neighbours': each alone (a failed statement changed nothing)
      await Promise.all(batch.map((w) => this.single(w.item).then(w.resolve, w.reject)));
      return;
    }
    batch.forEach((w, i) => w.resolve(results[i]!));
  }

  private single(item: I): Promise<R> {
    return this.ops.one ? this.ops.one(item) : this.ops.many([item]).then((r) => r[0]!);
  }
}
