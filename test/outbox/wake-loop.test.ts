import { describe, expect, it } from 'vitest';
import { WakeLoop } from '../../src/outbox/wake-loop.js';

describe('WakeLoop', () => {
  it('runs one round at a time; wakes during a round give exactly one more round, none is lost', async () => {
    let rounds = 0;
    let inRound = 0;
    let most = 0;
    let release!: () => void;
    const loop = new WakeLoop(async () => {
      rounds++;
      inRound++;
      most = Math.max(most, inRound);
      await new Promise<void>((resolve) => (release = resolve));
      inRound--;
    }, () => true);
    loop.wake();
    expect(rounds).toBe(1);
    for (let i = 0; i < 5; i++) loop.wake();
    release();
    await new Promise((r) => setImmediate(r));
    expect(rounds).toBe(2); // the five wakes: one more round, started at once
    release();
    await loop.current;
    await new Promise((r) => setImmediate(r));
    expect(loop.current).toBeUndefined();
    expect(rounds).toBe(2);
    expect(most).toBe(1);
  });

  it('starts nothing while it may not run', () => {
    let rounds = 0;
    let may = false;
    const loop = new WakeLoop(async () => void rounds++, () => may);
    loop.wake();
    expect(rounds).toBe(0);
    may = true;
    loop.wake();
    expect(rounds).toBe(1);
  });
});
