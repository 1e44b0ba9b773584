/**
 * Responses that stay open until the client leaves (server-sent event
 * streams). Shutdown ends them at once through the callback each registered:
 * waiting for them would only burn the grace period that requests in flight
 * (uploads) need, since a stream never finishes on its own.
 */
export class LongLivedResponses {
  private readonly open = new Set<() => void>();
  private closed = false;

  /** Registers `end` (ends the response cleanly); returns the function that forgets it. */
  add(end: () => void): () => void {
    if (this.closed) {
      end(); // shutting down already: do not even start
      return () => {};
    }
    this.open.add(end);
    return () => this.open.delete(end);
  }

  /** Ends every registered response and refuses new ones; returns how many were ended. */
  endAll(): number {
    this.closed = true;
    const ends = [...this.open];
    this.open.clear();
    for (const end of ends) {
      try {
        end();
      } catch {
        // one stream failing to end must not keep the others open
      }
    }
    return ends.length;
  }

  get size(): number {
    return this.open.size;
  }
}
