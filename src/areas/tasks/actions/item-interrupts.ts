import { ItemInterrupted, type Interruption } from '../../../connectors/facets/tasks.js';
import type { Logger } from '../../../logging/logger.js';
import type { Database, Sql } from '../../../storage/driver/database.js';

/** The NOTIFY channel on which pause and abort reach every worker process. */
const CHANNEL = 'task_interrupts';

/**
 * Pause and abort stop the items running anywhere: the action's transaction
 * sends `<tid> <pause|abort>` (delivered at commit, to every process that
 * listens), and each worker process aborts the signals of that task's items
 * it runs. A notification lost to a reconnect costs little: the item rows are
 * paused or aborted already, so the item's reports are refused and no further
 * item of the task is taken.
 */
export class ItemInterrupts {
  private readonly running = new Map<string, Set<AbortController>>();
  private listening: Promise<void> | undefined;

  constructor(private readonly db: Database, private readonly log: Logger) {}

  /** Starts listening (once per process; worker processes only). A failure is logged and tried again with the next item. */
  listen(): void {
    this.listening ??= this.db.listen(CHANNEL, (payload) => {
      if (payload === null) return; // a reconnect: see the class comment
      const [tid, by] = payload.split(' ');
      if (tid && (by === 'pause' || by === 'abort')) this.interrupt(tid, by);
    }).then(() => undefined, (err: unknown) => {
      this.log.warn({ err }, 'cannot listen for task interrupts; pause and abort take effect between items');
      this.listening = undefined;
    });
  }

  /** An item's controller, aborted by `interrupt(tid)` and by the job's own signal (shutdown, lost lock). */
  track(tid: string, jobSignal: AbortSignal): { signal: AbortSignal; done(): void } {
    this.listen(); // a failed listen is tried again here
    const ctl = new AbortController();
    const onJob = () => ctl.abort(new ItemInterrupted('shutdown'));
    if (jobSignal.aborted) onJob();
    else jobSignal.addEventListener('abort', onJob, { once: true });
    let set = this.running.get(tid);
    if (!set) this.running.set(tid, (set = new Set()));
    set.add(ctl);
    return {
      signal: ctl.signal,
      done: () => {
        jobSignal.removeEventListener('abort', onJob);
        set.delete(ctl);
        if (set.size === 0) this.running.delete(tid);
      },
    };
  }

  interrupt(tid: string, by: Interruption): number {
    const set = this.running.get(tid);
    if (!set) return 0;
    for (const ctl of set) ctl.abort(new ItemInterrupted(by));
    return set.size;
  }
}

/** Sends the interrupt with the action's transaction (delivered only if it commits). */
export async function notifyInterrupt(tx: Sql, tid: string, by: 'pause' | 'abort'): Promise<void> {
  await tx.query('SELECT pg_notify($1, $2)', [CHANNEL, `${tid} ${by}`]);
}
