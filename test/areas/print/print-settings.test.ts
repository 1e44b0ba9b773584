import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/load.js';
import { configSchema } from '../../../src/config/schema.js';

/** The print engine's batching settings: how far outcome statements and submissions are gathered per process. */
const load = (overrides: Record<string, unknown>) => loadConfig({ env: {}, overrides });

describe('print batching settings', () => {
  it('default to one statement of a kind at a time, up to 64 a statement (config/default.yaml and the schema alike)', () => {
    const fromFiles = loadConfig({ env: {} });
    expect(fromFiles.printDispatch.outcomes).toEqual({ maxInFlight: 1, maxBatch: 64 });
    expect(fromFiles.print.submissions).toEqual({ maxInFlight: 1, maxBatch: 64 });
    const bare = configSchema.parse({ auth: { roles: {} }, services: {} });
    expect(bare.printDispatch.outcomes).toEqual(fromFiles.printDispatch.outcomes);
    expect(bare.print.submissions).toEqual(fromFiles.print.submissions);
  });

  it('take numbers (also as text) and keep the key not given', () => {
    expect(load({ printDispatch: { outcomes: { maxBatch: '16' } } }).printDispatch.outcomes).toEqual({ maxInFlight: 1, maxBatch: 16 });
    expect(load({ print: { submissions: { maxInFlight: 2 } } }).print.submissions).toEqual({ maxInFlight: 2, maxBatch: 64 });
  });

  it('name the key of a bad value', () => {
    expect(() => load({ printDispatch: { outcomes: { maxBatch: 0 } } })).toThrow(ConfigError);
    expect(() => load({ printDispatch: { outcomes: { maxBatch: 0 } } })).toThrow(/printDispatch\.outcomes\.maxBatch/);
    expect(() => load({ printDispatch: { outcomes: { maxInFlight: 65 } } })).toThrow(/printDispatch\.outcomes\.maxInFlight/);
    expect(() => load({ print: { submissions: { maxBatch: 1001 } } })).toThrow(/print\.submissions\.maxBatch/);
    expect(() => load({ print: { submissions: { size: 8 } } })).toThrow(/print\.submissions/);
  });
});
