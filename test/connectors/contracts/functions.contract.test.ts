import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FunctionContext, FunctionParameter } from '../../../src/connectors/connector.js';
import { callFunction, FID_PATTERN } from '../../../src/connectors/facets/functions.js';
import { AppError } from '../../../src/errors/app-error.js';
import { exampleInstances, openContractEnv } from './instances.js';

/**
 * The contract of the `functions` facet, run against every registered
 * connector type's examples that have one: descriptors are well formed, an
 * unknown fid is 404 and bad parameters 400 before the function runs, a call
 * with every parameter gives a JSON result, and the query-string form (all
 * strings) gives the same result as typed JSON.
 */
const { instances, cleanup } = await exampleInstances('functions');
let env: Awaited<ReturnType<typeof openContractEnv>>;
beforeAll(async () => {
  env = await openContractEnv();
});
afterAll(async () => {
  await env?.close();
  await cleanup();
});

const ctx = (sid: string): FunctionContext => ({
  ...env.ports(sid), signal: new AbortController().signal,
  principal: { user: 'contract', identities: ['contract'], roles: ['admin'] } as unknown as FunctionContext['principal'],
});
const sample: Record<FunctionParameter['type'], string | number | boolean> = { string: 'text', number: 2.5, integer: 3, boolean: true };
const rejects = async (p: Promise<unknown>, status: number, code: string) =>
  expect(p).rejects.toSatisfy((e) => e instanceof AppError && e.status === status && e.code === code);

it('the mock functions take part', () => {
  expect(instances.map((i) => i.connector.type)).toContain('mock');
});

for (const { label, connector } of instances) {
  describe(`functions facet: ${label}`, () => {
    const facet = connector.functions!;
    const sid = connector.sid;

    it('lists well-formed descriptors with unique ids and parameter names', () => {
      expect(facet.list.length).toBeGreaterThan(0);
      expect(new Set(facet.list.map((f) => f.fid)).size).toBe(facet.list.length);
      for (const f of facet.list) {
        expect(f.fid).toMatch(FID_PATTERN);
        expect(f.description.length).toBeGreaterThan(0);
        expect(new Set(f.parameters.map((p) => p.name)).size).toBe(f.parameters.length);
        for (const p of f.parameters) expect(['string', 'number', 'integer', 'boolean']).toContain(p.type);
      }
      expect(JSON.parse(JSON.stringify(facet.list))).toEqual(facet.list);
    });

    it('an unknown function is 404 FUNCTION_NOT_FOUND (prototype names too)', async () => {
      for (const fid of ['no-such-function', '__proto__', 'constructor', 'toString']) {
        await rejects(callFunction(facet, fid, {}, ctx(sid)), 404, 'FUNCTION_NOT_FOUND');
      }
    });

    for (const f of facet.list) {
      it(`${f.fid}: bad parameters are 400 INVALID_PARAMETERS; typed and query-string calls agree`, async () => {
        const typed = Object.fromEntries(f.parameters.map((p) => [p.name, p.example ?? sample[p.type]]));
        const asQuery = Object.fromEntries(f.parameters.map((p) => [p.name, String(p.example ?? sample[p.type])]));
        await rejects(callFunction(facet, f.fid, { ...typed, 'not-declared': 'x' }, ctx(sid)), 400, 'INVALID_PARAMETERS');
        await rejects(callFunction(facet, f.fid, JSON.parse('{"__proto__": {"polluted": true}}'), ctx(sid)), 400, 'INVALID_PARAMETERS');
        expect(({} as Record<string, unknown>).polluted).toBeUndefined();
        for (const p of f.parameters.filter((q) => q.required)) {
          const { [p.name]: _omitted, ...rest } = typed;
          await rejects(callFunction(facet, f.fid, rest, ctx(sid)), 400, 'INVALID_PARAMETERS');
        }
        for (const p of f.parameters.filter((q) => q.type !== 'string')) {
          await rejects(callFunction(facet, f.fid, { ...typed, [p.name]: 'not-a-value' }, ctx(sid)), 400, 'INVALID_PARAMETERS');
        }
        const result = await callFunction(facet, f.fid, typed, ctx(sid));
        expect(JSON.parse(JSON.stringify(result))).toEqual(result);
        // without parameters both forms are the same call (and a reading such as free space may move in between)
        if (f.parameters.length > 0) expect(await callFunction(facet, f.fid, asQuery, ctx(sid))).toEqual(result);
      });
    }
  });
}
