import { mkdir } from 'node:fs/promises';
import type { Connector, ConnectorType } from '../connector.js';
import { optionsSchema, resolveConnection } from './options.js';
import { printFunctions } from './print-functions.js';
import { printTasks } from './print-tasks.js';

/**
 * The `print` task connector (DESIGN.md section 8): starting a task turns
 * each input document into a print job on the printer its merged metadata
 * names (`printer`, else `defaultPrinter`), with `copies`, `priority`,
 * `flow` and `jobName` from the metadata; the job's states show in the
 * task's `cstats`; pause, resume and abort act on the jobs. It reaches the
 * print services only through the `print` port (`src/runtime/print-port.ts`).
 * Its `printers` option names printers it creates at start when missing
 * (the demo's directory printer); `file:<relative path>` is a directory
 * under the data directory, created at start.
 */
export const printConnectorType: ConnectorType = {
  type: 'print',
  description: 'Prints each input document of a task as a print job (printer from the metadata key "printer"); cstats mirrors the jobs',
  examples: [{ defaultPrinter: 'Contract printer', printers: [{ name: 'Contract printer', connection: 'file:printed' }] }],
  ports: ['print'],
  create(ctx): Connector {
    const o = optionsSchema.parse(ctx.config.options ?? {});
    const print = ctx.ports?.print;
    if (!print) throw new Error('the print connector needs the print port');
    const printers = o.printers.map((p) => ({ ...p, ...resolveConnection(p.connection, ctx.dataDir) }));
    return {
      sid: ctx.sid,
      type: 'print',
      tasks: printTasks(print, o, ctx.sid),
      functions: printFunctions(print, o),
      async prepare() {
        for (const p of printers) {
          if (p.directory) await mkdir(p.directory, { recursive: true });
          const created = await print.ensurePrinter({ name: p.name, connection: p.connection, description: p.description, location: p.location }, `print:${ctx.sid}`);
          if (created) ctx.log.info({ printer: p.name, connection: p.connection }, 'printer created');
        }
      },
    };
  },
};
