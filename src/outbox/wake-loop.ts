/**
 * One round at a time, and never a wake lost: `wake()` starts a round now,
 * or, while one runs, exactly one more right after it (however many wakes
 * came meanwhile). The loop behind the outbox relay and the event publisher,
 * both woken by `NOTIFY` at every commit and by a sweep. `round` handles its
 * own errors (it must not reject); `canRun` is asked at every wake (stopped,
 * backing off).
 */
export class WakeLoop {
  private running: Promise<void> | undefined;
  private again = false;

  constructor(private readonly round: () => Promise<void>, private readonly canRun: () => boolean) {}

  wake(): void {
    if (!this.canRun()) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.round().finally(() => {
      this.running = undefined;
      if (this.again) {
        this.again = false;
        this.wake();
      }
    });
  }

  /** The round running now (undefined when none is). */
  get current(): Promise<void> | undefined {
    return this.running;
  }
}
