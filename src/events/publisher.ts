import type { Logger } from '../logging/logger.js';
import type { EventStream } from '../queue/event-stream.js';
import type { Database } from '../storage/driver/database.js';
import { currentSchema } from '../outbox/outbox-store.js';
import { WakeLoop } from '../outbox/wake-loop.js';
import { encodeEvent, rowIdOf } from './event.js';
import { EVENTS_CHANNEL, assignSeqs, oldestRetainedSeq, openPublisherRound, unpublished } from './event-store.js';

/** The stream's connection is down: the round did not start. */
class RedisAwayError extends Error {
  override readonly name = 'RedisAwayError';
}

export interface PublisherOptions {
  /** Events per round. */
  batch?: number;
  /** A round this often catches what a lost notification missed. */
  sweepMs?: number;
  /** Longest pause between rounds while Redis is unreachable. */
  maxBackoffMs?: number;
  /** How long the stream keeps events (it is trimmed below the oldest event this young). */
  retentionSec: number;
  /** How often the stream is trimmed. */
  trimEveryMs?: number;
}

/**
 * Moves committed `events` rows into the Redis stream, exactly once and in
 * order (docs/design/events.md). Every process runs one; a round takes the
 * publisher's turn (an advisory transaction lock per schema) or leaves the
 * rows to the process holding it. In its transaction a round:
 *
 * 0. takes the turn and reads the highest seq and the unpublished rows, in
 *    one statement;
 * 1. compares the stream's last seq with the highest seq in PostgreSQL: a
 *    higher stream means a publisher died between its XADD and its commit,
 *    and those rows take the seqs they were published under (read back from
 *    the stream), so nothing is published twice;
 * 2. gives the next unpublished rows the next seqs, appends them in one
 *    MULTI, and records the seqs; the commit makes them published.
 *
 * Redis away: the append fails, the transaction rolls back, the rows wait and
 * the publisher backs off. Woken by NOTIFY at each commit that raised an
 * event, and by a sweep.
 */
export class EventPublisher {
  private readonly opts: Required<PublisherOptions>;
  /** Publisher rounds, one at a time. */
  private readonly rounds = new WakeLoop(
    () => this.drain()
      .then(() => {
        if (this.warned) this.log.info('event publisher: Redis takes events again');
        this.failures = 0;
        this.warned = false;
      })
      .catch((err: unknown) => this.backOff(err)),
    () => this.started && !this.stopped && !this.retry,
  );
  private stopped = false;
  private started = false;
  private failures = 0;
  private warned = false;
  private retry: NodeJS.Timeout | undefined;
  private sweep: NodeJS.Timeout | undefined;
  private trimTimer: NodeJS.Timeout | undefined;
  private unlisten: (() => Promise<void>) | undefined;

  constructor(private readonly db: Database, private readonly stream: EventStream, private readonly log: Logger, opts: PublisherOptions) {
    this.opts = { batch: 500, sweepMs: 2000, maxBackoffMs: 5000, trimEveryMs: 30_000, ...opts };
  }

  async start(): Promise<void> {
    const schema = await currentSchema(this.db);
    this.unlisten = await this.db.listen(EVENTS_CHANNEL, (payload) => {
      if (payload === null || payload === schema) this.wake();
    });
    this.sweep = setInterval(() => this.wake(), this.opts.sweepMs);
    this.sweep.unref();
    this.trimTimer = setInterval(() => void this.trim(), this.opts.trimEveryMs);
    this.trimTimer.unref();
    this.started = true;
    this.wake();
  }

  wake(): void {
    this.rounds.wake();
  }

  /** Resolves once no round runs (tests). */
  async idle(): Promise<void> {
    while (this.rounds.current) await this.rounds.current;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.sweep);
    clearInterval(this.trimTimer);
    clearTimeout(this.retry);
    await this.unlisten?.().catch(() => undefined);
    await this.idle();
    await this.stream.close();
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.round()) === this.opts.batch);
  }

  /** One round; returns how many events it published (0 when another process has the turn). */
  private round(): Promise<number> {
    // no transaction waits on a Redis that is away (on PGlite it would hold the only connection)
    if (!this.stream.connected()) return Promise.reject(new RedisAwayError('Redis is not connected'));
    return this.db.transaction(async (tx) => {
      // the turn, the highest seq and the unpublished rows in one statement
      const opened = await openPublisherRound(tx, this.opts.batch);
      if (!opened.turn) return 0;
      let next = opened.max;
      let rows = opened.rows;
      const top = await this.stream.top();
      while (top > next) {
        // published by a round that did not commit: its rows keep the seqs the stream gave them
        const page = await this.stream.range(next, 1000);
        if (page.length === 0) break;
        const ids: number[] = [];
        const seqs: number[] = [];
        for (const e of page) {
          const id = rowIdOf(e.data);
          if (id !== undefined) {
            ids.push(id);
            seqs.push(e.seq);
          }
        }
        await assignSeqs(tx, ids, seqs);
        next = page.at(-1)!.seq;
        this.log.warn({ adopted: ids.length, upTo: next }, 'event publisher: adopted events a stopped publisher appended but did not record');
        // the adopted rows are published now: what is left is read again
        rows = await unpublished(tx, this.opts.batch);
      }
      if (rows.length === 0) return 0;
      const seqs = rows.map((_r, i) => next + 1 + i);
      await this.stream.append(rows.map((r, i) => ({ seq: seqs[i]!, data: encodeEvent(r, r.id) })));
      await assignSeqs(tx, rows.map((r) => r.id), seqs);
      return rows.length;
    });
  }

  /** Keeps the stream to the retention window (approximately: Redis trims whole nodes). */
  private async trim(): Promise<void> {
    try {
      const oldest = await oldestRetainedSeq(this.db, this.opts.retentionSec);
      if (oldest !== undefined) await this.stream.trim(oldest);
    } catch (err) {
      this.log.debug({ err }, 'event stream trim failed; the next one tries again');
    }
  }

  private backOff(err: unknown): void {
    if (this.stopped) return;
    // Redis still connecting at start is not worth a warning; an outage that lasts is
    const away = err instanceof RedisAwayError;
    if (!this.warned && (!away || this.failures >= 10)) {
      this.warned = true;
      this.log.warn({ err }, 'event publisher: round failed (Redis or the database away?); backing off');
    }
    this.failures++;
    const delay = Math.min(100 * 2 ** (this.failures - 1), this.opts.maxBackoffMs);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.wake();
    }, delay);
    this.retry.unref();
  }
}
