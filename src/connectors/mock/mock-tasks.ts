import { setTimeout as sleep } from 'node:timers/promises';
import { ItemInterrupted, type TaskAction, type TasksFacet } from '../facets/tasks.js';

/**
 * Simulated task work: each item "works" for `itemMs`, then is done, or
 * failed when its metadata has `mock.fail` (the value is the message).
 * Pause and abort interrupt items in progress; resume runs them again.
 */
export function mockTasks(itemMs: number, actions: readonly TaskAction[]): TasksFacet {
  return {
    actions,
    async runItem(item, ctx) {
      const jobId = `mock.${item.tid}.${item.id}`;
      await ctx.report({ jobId, state: 'working', outcome: 'running' });
      try {
        await sleep(itemMs, undefined, { signal: ctx.signal });
      } catch {
        const by = ctx.signal.reason instanceof ItemInterrupted ? ctx.signal.reason.by : 'abort';
        // on shutdown the item stays "running": it runs again after the restart
        if (by !== 'shutdown') await ctx.report({ jobId, state: by === 'pause' ? 'paused' : 'aborted', outcome: by === 'pause' ? 'paused' : 'aborted' });
        throw ctx.signal.reason;
      }
      const fail = item.metadata['mock.fail'];
      if (fail) await ctx.report({ jobId, state: 'failed', outcome: 'failed', message: String(fail) });
      else await ctx.report({ jobId, state: 'done', outcome: 'done', message: `simulated ${item.href}` });
    },
  };
}
