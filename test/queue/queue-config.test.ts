import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.js';

/** The queue keys: concurrency as one number (the old form) or per queue, lock duration, re-creation bound. */
const load = (queues: unknown) => loadConfig({ env: {}, overrides: { queues } });

describe('queues configuration', () => {
  it('keeps the single-number concurrency, and the defaults', () => {
    // config/default.yaml: more slots for the queues whose jobs mostly wait
    expect(loadConfig({ env: {} }).queues).toMatchObject({ concurrency: { default: 4, tasks: 16, print: 16 }, lockDurationMs: 30_000, maxRecreations: 3 });
    expect(load({ concurrency: 7 }).queues.concurrency).toBe(7);
    expect(load({ concurrency: '9' }).queues.concurrency).toBe(9);
  });

  it('takes concurrency per queue with a default', () => {
    // merged over config/default.yaml's mapping: the queues not named keep its values
    expect(load({ concurrency: { commands: 8, previews: 2 } }).queues.concurrency).toEqual({ default: 4, tasks: 16, print: 16, commands: 8, previews: 2 });
    expect(load({ concurrency: { default: 1, housekeeping: 1 } }).queues.concurrency).toEqual({ default: 1, tasks: 16, print: 16, housekeeping: 1 });
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
