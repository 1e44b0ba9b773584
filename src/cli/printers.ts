import type { Command } from 'commander';
import { contextOf } from './context.js';
import { print, table, fields, type Column } from './output.js';

interface Printer {
  name: string;
  connection: string;
  description: string | null;
  location: string | null;
  enabled: boolean;
  paused: boolean;
  redirect: string | null;
  message: string | null;
  physical: { reachable?: boolean; message?: string | null } | null;
  error: string | null;
  lastPrinted: string | null;
}

const COLUMNS: Column<Printer>[] = [
  ['name', (p) => p.name], ['connection', (p) => p.connection], ['enabled', (p) => p.enabled], ['paused', (p) => p.paused],
  ['redirect', (p) => p.redirect], ['reachable', (p) => p.physical?.reachable], ['last printed', (p) => p.lastPrinted], ['error', (p) => p.error],
];
const one = (p: Printer) => fields(COLUMNS.map(([h, f]) => [h, f(p)]));
const path = (name: string, op = '') => `/v3/printers/${encodeURIComponent(name)}${op}`;

/** `wcr printers list|add|pause|resume|check`: printers through `/v3/printers/` (lpstat -p, lpadmin, cupsdisable). */
export function printerCommands(program: Command): void {
  const printers = program.command('printers').description('printers: list, add, pause, resume, check');

  printers.command('list')
    .description('every printer, by name')
    .action(async (_o: unknown, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const rows = await api.json<Printer[]>('GET', '/v3/printers/');
      print(out, rows, () => table(rows, COLUMNS));
    });

  printers.command('add')
    .description('add a printer')
    .argument('<name>', 'the printer\'s name')
    .argument('<connection>', 'file:///dir, socket://host[:9100], ipp://host[:631][/path], ipps://…, lpr://host[:515]/queue')
    .option('--description <text>', 'what it is')
    .option('--location <text>', 'where it is')
    .option('--disabled', 'added disabled (takes no jobs)')
    .action(async (name: string, connection: string, o: { description?: string; location?: string; disabled?: boolean }, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const p = await api.json<Printer>('POST', '/v3/printers/', {
        json: { name, connection, ...(o.description ? { description: o.description } : {}), ...(o.location ? { location: o.location } : {}), enabled: !o.disabled },
      });
      print(out, p, () => one(p));
    });

  for (const [op, what] of [['pause', 'hold the printer\'s jobs (they wait)'], ['resume', 'let a paused printer print again']] as const) {
    printers.command(op)
      .description(what)
      .argument('<name>', 'the printer\'s name')
      .action(async (name: string, _o: unknown, cmd: Command) => {
        const { api, out } = contextOf(cmd);
        const p = await api.json<Printer>('PUT', path(name, `/${op}`));
        print(out, p, () => one(p));
      });
  }

  printers.command('check')
    .description('probe the device (directory writable, TCP connect, IPP attributes) and show the result')
    .argument('<name>', 'the printer\'s name')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      const { api, out } = contextOf(cmd);
      const p = await api.json<Printer>('PUT', path(name, '/checkPhysical'));
      print(out, p, () => one(p));
      if (p.physical?.reachable === false) process.exitCode = 1;
    });
}
