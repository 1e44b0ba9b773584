import { describe, expect, it } from 'vitest';
import { MicroBatcher } from '../../src/storage/micro-batcher.js';

/** A statement stand-in that answers after a tick and records what each call carried. */
function recorder(fail?: (items: readonly string[]) => boolean) {
  const calls: string[][] = [];
  const many = async (items: readonly string[]) => {
    calls.push([...items]);
    await new Promise((r) => setTimeout(r, 5));
    if (fail?.(items)) throw new Error(`refused ${items.join(',')}`);
    return items.map((i) => i.toUpperCase());
  };
  return { calls, many };
}

describe('MicroBatcher', () => {
  it('a lone request goes at once on its own', async () => {
    const r = recorder();
    const b = new MicroBatcher({ many: r.many });
    expect(await b.run('a')).toBe('A');
    expect(r.calls).toEqual([['a']]);
  });

  it('requests made while statements run go together, in order, at most one per key and maxBatch each', async () => {
    const r = recorder();
    const b = new MicroBatcher({ many: r.many, key: (s: string) => s[0]! }, 1, 3);
    const items = ['a1', 'b1', 'a2', 'c1', 'd1', 'e1'];
    expect(await Promise.all(items.map((i) => b.run(i)))).toEqual(items.map((i) => i.toUpperCase()));
    // the first goes alone; the rest wait for it, then go three at a time, the second "a" in a later statement
    expect(r.calls).toEqual([['a1'], ['b1', 'a2', 'c1'], ['d1', 'e1']]);
  });

  it('gatherTurn: requests made in one turn of the event loop go together even when nothing is in flight; a lone one still goes in that turn', async () => {
    const r = recorder();
    const b = new MicroBatcher({ many: r.many, key: (s: string) => s[0]! }, 1, 64, { gatherTurn: true });
    const items = ['a1', 'b1', 'a2', 'c1'];
    expect(await Promise.all(items.map((i) => b.run(i)))).toEqual(items.map((i) => i.toUpperCase()));
    // without gatherTurn: ['a1'], then the rest; with it, the first statement takes all it may (one per key)
    expect(r.calls).toEqual([['a1', 'b1', 'c1'], ['a2']]);
    // a lone request is not held past the turn's end (setImmediate)
    const t0 = performance.now();
    let sentAt = 0;
    const lone = new MicroBatcher({ many: async (xs: readonly string[]) => { sentAt = performance.now(); return xs.map((x) => x); } }, 1, 64, { gatherTurn: true });
    expect(await lone.run('z')).toBe('z');
    expect(sentAt - t0).toBeLessThan(50);
  });

  it('a statement of several that fails is tried again one by one: only the request that fails alone is refused', async () => {
    const r = recorder((items) => items.includes('bad'));
    const b = new MicroBatcher({ many: r.many }, 1);
    const results = await Promise.allSettled(['x', 'y', 'bad', 'z'].map((i) => b.run(i)));
    expect(results.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message))).toEqual(['X', 'Y', 'refused bad', 'Z']);
    expect(r.calls).toEqual([['x'], ['y', 'bad', 'z'], ['y'], ['bad'], ['z']]);
  });
});
