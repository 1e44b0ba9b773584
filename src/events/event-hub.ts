import type { Logger } from '../logging/logger.js';
import type { Principal } from '../auth/principal.js';
import type { Policy } from '../auth/policy.js';
import type { EventStream } from '../queue/event-stream.js';
import type { Database } from '../storage/driver/database.js';
import { decodeEvent, type StreamEvent } from './event.js';
import { eventsAfter, maxSeq } from './event-store.js';
import { maySee } from './visibility.js';

/** Where a subscriber's events go (an SSE response). */
export interface EventSink {
  principal: Principal;
  /** Only these types (all when undefined). */
  types?: ReadonlySet<string>;
  /** Writes one event; false when the client was cut (its buffer is full): the hub forgets it. */
  send(e: StreamEvent): boolean;
  /** The stream cannot resume where the client asked; `head` is where it continues. */
  lost(head: number, reason: string): void;
  /** Ends the client's stream (its backlog outgrew the bound while it caught up). */
  cut(reason: string): void;
}

interface Subscription {
  sink: EventSink;
  /** The last seq handled for this subscriber. */
  sent: number;
  /** Live events held while the backlog is written; undefined once live. */
  pending?: StreamEvent[];
}

const PAGE = 500;

/**
 * Bytes written to clients before the hub yields to the event loop: a burst
 * is handed out in slices so that sockets drain between them, and a client's
 * unsent bytes measure its reading, not the size of the burst.
 */
const SLICE_BYTES = 64 * 1024;
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * One per API process: reads the Redis stream (XREAD BLOCK on a connection
 * of its own) and hands every event to the subscribers that may see it.
 * Resumes (`Last-Event-ID`) read the stream, or PostgreSQL where the stream
 * has lost the range; seqs are dense, so a gap is always noticed. After a
 * Redis outage the hub first reads what PostgreSQL published meanwhile, so
 * events Redis lost in a restart still arrive, once and in order.
 */
export class EventHub {
  private readonly subs = new Set<Subscription>();
  private last = 0;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private recovering = false;
  private stream!: EventStream;
  /** Ends the pause between attempts at once when the hub stops. */
  private wakeUp: (() => void) | undefined;

  constructor(
    private readonly db: Database,
    /** Taken at start; its reading connection opens on the first read, so only a process that serves the API reads. */
    private readonly openStream: () => EventStream,
    private readonly policy: Policy,
    private readonly log: Logger,
    private readonly opts: { maxPending: number; blockMs?: number },
  ) {}

  async start(): Promise<void> {
    this.stream = this.openStream();
    // PostgreSQL's highest seq is where the stream stands (the publisher keeps them equal); Redis is not waited for
    this.last = await maxSeq(this.db);
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wakeUp?.();
    this.subs.clear();
    await this.stream?.close();
    await this.loop;
  }

  /** Subscribers connected to this process. */
  get size(): number {
    return this.subs.size;
  }

  /** The last seq this process has seen. */
  get head(): number {
    return this.last;
  }

  /**
   * Starts delivering to `sink`: from now on, or every event after `after`
   * first (then live, nothing twice, nothing skipped). Returns the function
   * that unsubscribes.
   */
  async subscribe(sink: EventSink, after?: number): Promise<() => void> {
    const sub: Subscription = { sink, sent: after ?? this.last, pending: after === undefined ? undefined : [] };
    this.subs.add(sub);
    const forget = () => void this.subs.delete(sub);
    if (after === undefined) return forget;
    try {
      await this.backlog(sub, after);
    } catch (err) {
      this.log.warn({ err }, 'events: reading a backlog failed');
      sink.lost(this.last, 'the events after this id could not be read');
      sub.sent = Math.max(sub.sent, this.last);
    }
    // the held events go out in one synchronous pass (nothing else is delivered to this subscriber meanwhile)
    const held = sub.pending ?? [];
    sub.pending = undefined;
    for (const e of held) if (!this.deliver(sub, e)) break;
    return forget;
  }

  private async backlog(sub: Subscription, after: number): Promise<void> {
    // what PostgreSQL has published may be ahead of this process (it cannot read Redis now): serve up to that
    const head = Math.max(this.last, await maxSeq(this.db));
    if (after > head) {
      sub.sink.lost(head, 'unknown event id');
      sub.sent = head;
      return;
    }
    let cursor = after;
    while (cursor < head && this.subs.has(sub)) {
      let page = await this.stream.range(cursor, PAGE).catch(() => [] as { seq: number; data: string }[])
        .then((entries) => entries.flatMap((x) => decodeEvent(x.seq, x.data) ?? []));
      if (page[0]?.seq !== cursor + 1) page = await eventsAfter(this.db, cursor, PAGE);
      if (page[0]?.seq !== cursor + 1) {
        sub.sink.lost(head, 'the events after this id are no longer kept');
        sub.sent = Math.max(sub.sent, head);
        return;
      }
      let bytes = 0;
      for (const e of page) {
        if (!this.deliver(sub, e)) return;
        if ((bytes += e.payload.length) > SLICE_BYTES) {
          bytes = 0;
          await nextTurn();
        }
      }
      cursor = page.at(-1)!.seq;
    }
  }

  /** Hands one event to one subscriber; false when the subscriber is gone. */
  private deliver(sub: Subscription, e: StreamEvent): boolean {
    if (e.seq <= sub.sent) return true;
    sub.sent = e.seq;
    const { sink } = sub;
    if (sink.types && !sink.types.has(e.type)) return true;
    if (!maySee(this.policy, sink.principal, e)) return true;
    try {
      if (sink.send(e)) return true;
    } catch (err) {
      // one client's failure is its own: the others are served
      this.log.debug({ err }, 'events: writing to a client failed; it is dropped');
    }
    this.subs.delete(sub);
    return false;
  }

  private dispatch(e: StreamEvent): void {
    if (e.seq <= this.last) return;
    this.last = e.seq;
    for (const sub of this.subs) {
      if (sub.pending) {
        sub.pending.push(e);
        if (sub.pending.length > this.opts.maxPending) {
          this.subs.delete(sub);
          sub.sink.cut('too many events while catching up');
        }
      } else {
        this.deliver(sub, e);
      }
    }
  }

  /** Everything PostgreSQL published after `this.last` (Redis was away or lost entries). */
  private async fromDatabase(upTo = Number.MAX_SAFE_INTEGER): Promise<void> {
    for (;;) {
      const page = await eventsAfter(this.db, this.last, PAGE);
      const wanted = page.filter((e) => e.seq < upTo);
      for (const e of wanted) this.dispatch(e);
      if (page.length < PAGE || wanted.length < page.length) return;
    }
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const entries = await this.stream.read(this.last, this.opts.blockMs ?? 5000, 1000);
        if (this.stopped) return;
        if (this.recovering) {
          await this.fromDatabase();
          this.recovering = false;
          this.log.info({ head: this.last }, 'events: reading the stream again');
        }
        failures = 0;
        let bytes = 0;
        for (const x of entries) {
          const e = decodeEvent(x.seq, x.data);
          if (!e || e.seq <= this.last) continue;
          if (e.seq > this.last + 1) await this.fromDatabase(e.seq); // the stream lost these (Redis restarted)
          this.dispatch(e);
          if ((bytes += x.data.length * Math.max(1, this.subs.size)) > SLICE_BYTES) {
            bytes = 0;
            await nextTurn();
          }
        }
      } catch (err) {
        if (this.stopped) return;
        if (!this.recovering) this.log.warn({ err }, 'events: cannot read the stream; retrying');
        this.recovering = true;
        failures++;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(50 * 2 ** failures, 2000));
          this.wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
      }
    }
  }
}
