import { Command } from 'commander';
import { jobCommands } from './jobs.js';
import { listCommands } from './lists.js';
import { printerCommands } from './printers.js';
import { statusCommand } from './status.js';
import { taskCommands } from './tasks.js';
import { tokenCommands } from './token.js';

/**
 * `wcr`, the operator's command line (issue 24, item 7): every command group
 * registered here, one file each. Commands talk to the HTTP API only.
 */
export function wcrProgram(): Command {
  const program = new Command('wcr')
    .description('operate a workflow connector runtime over its HTTP API: print jobs, printers, tasks, lists, status')
    .option('--url <url>', 'the server (default: http://HOST:PORT from the local configuration and environment)')
    .option('--token <jwt>', 'the access token (default: one minted for the local development issuer, with the admin role)')
    .option('--user <name>', 'the user of a minted token', 'wcr')
    .option('--json', 'print JSON for scripts instead of tables')
    .showHelpAfterError()
    .configureHelp({ showGlobalOptions: true });
  tokenCommands(program);
  jobCommands(program);
  printerCommands(program);
  taskCommands(program);
  listCommands(program);
  statusCommand(program);
  return program;
}
