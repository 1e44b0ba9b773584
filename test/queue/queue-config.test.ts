import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

/** The queue keys: concurrency as one number (the old form) or per queue, lock duration, re-creation bound. */
const load = (queues: unknown) => loadConfig({ env: {}, overrides: { queues } });

describe('queues configuration', () => {
  it('keeps the single-number concurrency, and the defaults', () => {
    expect(loadConfig({ env: {} }).queues).toMatchObject({ concurrency: 4, lockDurationMs: 30_000, maxRecreations: 3 });
    expect(load({ concurrency: 7 }).queues.concurrency).toBe(7);
    expect(load({ concurrency: '9' }).queues.concurrency).toBe(9);
  });

  it('takes concurrency per queue with a default', () => {
    expect(load({ concurrency: { commands: 8, previews: 2 } }).queues.concurrency).toEqual({ default: 4, commands: 8, previews: 2 });
    expect(load({ concurrency: { default: 1, housekeeping: 1 } }).queues.concurrency).toEqual({ default: 1, housekeeping: 1 });
  });

  it('names the key of an unknown queue or a bad value', () => {
    expect(() => load({ concurrency: { comands: 8 } })).toThrow(ConfigError);
    expect(() => load({ concurrency: { comands: 8 } })).toThrow(/queues\.concurrency/);
    expect(() => load({ concurrency: { commands: 0 } })).toThrow(/queues\.concurrency/);
    expect(() => load({ concurrency: 65 })).toThrow(/queues\.concurrency/);
    expect(() => load({ lockDurationMs: 10 })).toThrow(/queues\.lockDurationMs/);
    expect(() => load({ maxRecreations: -1 })).toThrow(/queues\.maxRecreations/);
  });
});
