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
   * Keeps the caller's session counted until `untilMs` (epoch ms) whatever
   * its token says: an open event stream calls this on each heartbeat with
   * a time a little past the next one.
   */
  async hold(p: Principal, untilMs: number): Promise<void> {
    if (p.system) return;
    await store.holdSession(this.o.db, p.user, p.session, new Date(untilMs));
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
