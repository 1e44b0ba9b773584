import { ItemInterrupted, type Interruption } from '../../../connectors/facets/tasks.js';
import type { Logger } from '../../../logging/logger.js';
import type { Database } from '../../../storage/driver/database.js';
import { INTERRUPT_CHANNEL } from '../store/task-store.js';

/**
 * Pause and abort stop the items running anywhere: the action's transaction
 * sends `<tid> <run> <pause|abort>` (delivered at commit, to every process
 * that listens), and each worker process aborts the signals of that task's
 * items it runs for that run or an older one. The run matters: a pause
 * followed at once by a resume must not stop the new run's items when the
 * pause's notification arrives late. A notification lost to a reconnect costs little: the item rows are
 * paused or aborted already, so the item's reports are refused and no further
 * item of the task is taken.
 */
export class ItemInterrupts {
  private readonly running = new Map<string, Set<{ run: number; ctl: AbortController }>>();
  private listening: Promise<void> | undefined;

  constructor(private readonly db: Database, private readonly log: Logger) {}

  /** Starts listening (once per process; worker processes only). A failure is logged and tried again with the next item. */
  listen(): void {
    this.listening ??= this.db.listen(INTERRUPT_CHANNEL, (payload) => {
      if (payload === null) return; // a reconnect: see the class comment
      const [tid, run, by] = payload.split(' ');
      if (tid && (by === 'pause' || by === 'abort')) this.interrupt(tid, Number(run), by);
    }).then(() => undefined, (err: unknown) => {
      this.log.warn({ err }, 'cannot listen for task interrupts; pause and abort take effect between items');
      this.listening = undefined;
    });
  }

  /** An item's controller, aborted by `interrupt(tid)` and by the job's own signal (shutdown, lost lock). */
  track(tid: string, run: number, jobSignal: AbortSignal): { signal: AbortSignal; done(): void } {
    this.listen(); // a failed listen is tried again here
    const ctl = new AbortController();
    const entry = { run, ctl };
    const onJob = () => ctl.abort(new ItemInterrupted('shutdown'));
    // no `once` option (its options object costs on every item): `done` removes the listener, and a second abort is a no-op
    if (jobSignal.aborted) onJob();
    else jobSignal.addEventListener('abort', onJob);
    let set = this.running.get(tid);
    if (!set) this.running.set(tid, (set = new Set()));
    set.add(entry);
    return {
      signal: ctl.signal,
      done: () => {
        jobSignal.removeEventListener('abort', onJob);
        set.delete(entry);
        if (set.size === 0) this.running.delete(tid);
      },
    };
  }

  /** Aborts the signals of the task's items running here for `run` or an older run; returns how many. */
  interrupt(tid: string, run: number, by: Interruption): number {
    let n = 0;
    for (const e of this.running.get(tid) ?? []) {
      if (!(e.run <= run)) continue; // a NaN run (malformed payload) interrupts nothing
      e.ctl.abort(new ItemInterrupted(by));
      n += 1;
    }
    return n;
  }
}
