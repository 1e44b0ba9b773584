import type { Policy } from '../../auth/policy.js';
import type { Principal } from '../../auth/principal.js';
import type { Logger } from '../../logging/logger.js';
import type { Database } from '../../storage/driver/database.js';
import * as store from './store/session-store.js';

/** Sessions this process remembers having recorded (then pruned of expired ones). */
const REMEMBERED = 50_000;

/**
 * Open sessions per user (`GET /v1/sessions`, DESIGN.md section 6): the
 * distinct OIDC sessions (`sid` claim, else token id) of the user seen
 * while their token is valid, plus those an open event stream holds. Every
 * authenticated request reports its principal (`seen`); a session is written
 * to the `sessions` table the first time a process sees it (or sees it with
 * a later expiry), so polling costs a map lookup, and the count is the same
 * from every API process. No HTTP; SQL in `store/session-store.ts`.
 */
export class SessionService {
  /** `user\0session` -> the expiry (ms) already recorded. */
  private readonly recorded = new Map<string, number>();
  /** `user\0session` -> the open event streams of this process that hold it. */
  private readonly streams = new Map<string, { user: string; session: string; n: number }>();
  private holdTimer?: NodeJS.Timeout;

  constructor(private readonly o: { db: Database; policy: Policy; log: Logger }) {}

  /**
   * Records the caller's session once per process and token expiry. A
   * failure is logged and tried again on the next request: counting
   * sessions never fails a request that has nothing to do with them.
   */
  async seen(p: Principal): Promise<void> {
    if (p.system) return;
    const key = `${p.user}\u0000${p.session}`;
    const expiresMs = p.expires * 1000;
    if ((this.recorded.get(key) ?? -1) >= expiresMs) return;
    try {
      await store.recordSession(this.o.db, p.user, p.session, new Date(expiresMs));
      this.remember(key, expiresMs);
    } catch (err) {
      this.o.log.warn({ err, user: p.user }, 'could not record the session');
    }
  }

  /**
   * An event stream of `p` is open: its session counts while the stream
   * does, whatever its token says. Every `everyMs` one statement holds the
   * sessions of all this process's open streams until a little past the
   * next round (so a process that dies stops holding them within two
   * rounds); the first stream of a session is held at once. Returns what to
   * call when the stream closes (its session then lapses by itself).
   */
  streamOpened(p: Principal, everyMs: number): () => void {
    if (p.system) return () => {};
    const key = `${p.user}\u0000${p.session}`;
    const open = this.streams.get(key);
    if (open) open.n += 1;
    else {
      this.streams.set(key, { user: p.user, session: p.session, n: 1 });
      void this.holdOpenStreams([{ user: p.user, session: p.session }], everyMs);
    }
    if (!this.holdTimer) {
      this.holdTimer = setInterval(() => void this.holdOpenStreams([...this.streams.values()], everyMs), everyMs);
      this.holdTimer.unref();
    }
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      const s = this.streams.get(key);
      if (s && --s.n === 0) this.streams.delete(key);
      if (this.streams.size === 0) {
        clearInterval(this.holdTimer);
        this.holdTimer = undefined;
      }
    };
  }

  /** Open event streams of this process (tests). */
  get openStreams(): number {
    let n = 0;
    for (const s of this.streams.values()) n += s.n;
    return n;
  }

  private async holdOpenStreams(held: readonly { user: string; session: string }[], everyMs: number): Promise<void> {
    try {
      // two rounds and a margin: one late round (a busy database) does not drop a live stream's session
      await store.holdSessions(this.o.db, held, new Date(Date.now() + 2 * everyMs + 5000));
    } catch (err) {
      this.o.log.warn({ err, streams: held.length }, 'could not hold the sessions of open event streams; trying again next round');
    }
  }

  /** GET /sessions: `{ count }` of the caller's live sessions, this one included. */
  async count(p: Principal): Promise<{ count: number }> {
    this.o.policy.require(p, 'sessions', 'read');
    // this request's own session, even when recording it failed before
    if (!p.system) await store.recordSession(this.o.db, p.user, p.session, new Date(p.expires * 1000));
    return { count: await store.countSessions(this.o.db, p.identities) };
  }

  /** Housekeeping: sessions dead for an hour go. */
  removeDead(): Promise<number> {
    return store.deleteDeadSessions(this.o.db, 3600);
  }

  private remember(key: string, expiresMs: number): void {
    if (this.recorded.size >= REMEMBERED) {
      const now = Date.now();
      for (const [k, exp] of this.recorded) if (exp < now) this.recorded.delete(k);
      // still full of live sessions: start afresh (each is written once more, harmlessly)
      if (this.recorded.size >= REMEMBERED) this.recorded.clear();
    }
    this.recorded.set(key, expiresMs);
  }
}
