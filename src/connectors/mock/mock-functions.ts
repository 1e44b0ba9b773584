import type { FunctionsFacet } from '../facets/functions.js';

/** Two demo functions: `echo` (returns its text) and `add` (sums two numbers). */
export function mockFunctions(): FunctionsFacet {
  return {
    list: [
      {
        fid: 'echo',
        description: 'Returns the text it was given',
        parameters: [{ name: 'text', type: 'string', required: true, description: 'any text' }],
      },
      {
        fid: 'add',
        description: 'Adds two numbers',
        parameters: [
          { name: 'a', type: 'number', required: true, description: 'first addend' },
          { name: 'b', type: 'number', required: false, description: 'second addend (default 0)' },
        ],
      },
    ],
    async call(fid, params, ctx) {
      switch (fid) {
        case 'echo':
          return { text: params.text, user: ctx.principal.user };
        case 'add':
          return { sum: Number(params.a) + Number(params.b ?? 0) };
        default:
          throw new Error(`mock: no function ${fid}`); // unreachable: callFunction checks the fid first
      }
    },
  };
}
