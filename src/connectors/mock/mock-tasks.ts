import { createHash } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ItemInterrupted, type ItemEffect, type TaskAction, type TaskItem, type TasksFacet } from '../facets/tasks.js';

/** The mock's task options (connector options `tasks`). */
export interface MockTaskOptions {
  /** How long each item "works". */
  itemMs: number;
  /** Share of items that fail, 0..1, decided by the item id (the same item always fails). */
  failRate: number;
  actions: readonly TaskAction[];
}

/** The state key counting an item's side effects: `effects/<tid>/<item id>`. */
export const effectKey = (tid: string, item: string) => `effects/${tid}/${item}`;

/** A metadata value by flat key (`"mock.fail"`) or by path (`{ "mock": { "fail": … } }`). */
function setting(meta: Readonly<Record<string, unknown>>, key: string): unknown {
  if (Object.hasOwn(meta, `mock.${key}`)) return meta[`mock.${key}`];
  const mock = Object.hasOwn(meta, 'mock') ? meta.mock : undefined;
  return typeof mock === 'object' && mock !== null && Object.hasOwn(mock, key) ? (mock as Record<string, unknown>)[key] : undefined;
}

const numberIn = (v: unknown, min: number, max: number): number | undefined => {
  const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
  return typeof n === 'number' && Number.isFinite(n) && n >= min && n <= max ? n : undefined;
};

/** A stable number in [0, 1) from the item's id: whether it falls under `failRate`. */
const draw = (item: TaskItem) => createHash('sha256').update(`${item.tid}:${item.id}`).digest().readUInt32BE(0) / 2 ** 32;

/** The side effect of a finished item: its counter in the service's state, applied by the final report's own statement. */
const countEffect = (item: TaskItem): ItemEffect => ({ op: 'increment', key: effectKey(item.tid, item.id) });

/**
 * Simulated task work. Each item "works" for `itemMs` (item metadata
 * `mock.delayMs` overrides), then is done, or failed when its metadata has
 * `mock.fail` (true or a message) or it falls under the fail rate
 * (`mock.failRate` in the metadata overrides the option). A finished item
 * counts one side effect in `effects/<tid>/<item>` of the service's state,
 * in the same statement as its final report: tests read the count to prove
 * that every item was processed exactly once. `mock.handOff: true` hands the
 * item off instead (reported `running` with an href, no final report: what a
 * print connector does; tests finish it through the ItemReporter). Pause and abort interrupt
 * items in progress; resume runs them again.
 */
export function mockTasks(o: MockTaskOptions): TasksFacet {
  return {
    actions: o.actions,
    async runItem(item, ctx) {
      const jobId = `mock.${item.tid}.${item.id}`;
      const delay = numberIn(setting(item.metadata, 'delayMs'), 0, 3_600_000) ?? o.itemMs;
      try {
        // a zero-delay item goes straight to its final report (one write per item)
        if (delay > 0) {
          await ctx.report({ jobId, state: 'working', outcome: 'running' });
          await sleep(delay, undefined, { signal: ctx.signal });
        }
        if (ctx.signal.aborted) throw ctx.signal.reason;
      } catch {
        const by = ctx.signal.reason instanceof ItemInterrupted ? ctx.signal.reason.by : 'abort';
        // on shutdown the item stays "running": it runs again after the restart
        if (by !== 'shutdown') await ctx.report({ jobId, state: by === 'pause' ? 'paused' : 'aborted', outcome: by === 'pause' ? 'paused' : 'aborted' });
        throw ctx.signal.reason;
      }
      // handed off: the work goes on "elsewhere" and its later states arrive through the tasks area's ItemReporter
      if (setting(item.metadata, 'handOff') === true) {
        await ctx.report({ jobId, state: 'handed off', outcome: 'running', href: `mock://${item.tid}/${item.id}` });
        return;
      }
      const fail = setting(item.metadata, 'fail');
      const rate = numberIn(setting(item.metadata, 'failRate'), 0, 1) ?? o.failRate;
      // draw() is in [0, 1): with a fail rate of 0 (the default) no item falls under it, so it is not computed
      const failed = (fail !== undefined && fail !== false && fail !== null && fail !== '') || (rate > 0 && draw(item) < rate);
      if (failed) {
        const message = typeof fail === 'string' ? fail : 'simulated failure';
        await ctx.report({ jobId, state: 'failed', outcome: 'failed', message }, countEffect(item));
      } else {
        await ctx.report({ jobId, state: 'done', outcome: 'done', message: `simulated ${item.href}` }, countEffect(item));
      }
    },
  };
}
