import type { FunctionsFacet } from '../facets/functions.js';
import type { PrintPort } from '../ports.js';

/**
 * `printers`: the printers this service prints to (its default and the ones
 * it ensures), each with its state in the print API's words (absent when it
 * no longer exists) and whether it is the default.
 */
export function printFunctions(print: PrintPort, o: { defaultPrinter?: string; printers: readonly { name: string }[] }): FunctionsFacet {
  const names = [...new Set([...(o.defaultPrinter ? [o.defaultPrinter] : []), ...o.printers.map((p) => p.name)])];
  return {
    list: [{ fid: 'printers', description: 'The printers this service prints to: name, state (absent: no such printer), default', parameters: [] }],
    async call() {
      const printers = [];
      for (const name of names) {
        const p = await print.printer(name);
        printers.push({ name, state: p?.state ?? 'absent', description: p?.description ?? null, default: name === o.defaultPrinter });
      }
      return { printers };
    },
  };
}
