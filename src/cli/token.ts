import type { Command } from 'commander';
import { print, fields } from './output.js';
import { positiveInt } from './context.js';
import { DEFAULT_LIFETIME_S, mintDevToken } from './token-source.js';

/** `wcr token`: a token from the local development issuer. */
export function tokenCommands(program: Command): void {
  program.command('token')
    .description('mint an access token from the local development issuer (the server\'s DATA_DIR, HOST, PORT)')
    .option('--as <user>', 'the token\'s user (default: --user)')
    .option('--roles <roles>', 'comma-separated roles, each one of the configured roles', 'user')
    .option('--email <email>', 'the token\'s email claim')
    .option('--expires <seconds>', 'lifetime in seconds', positiveInt('--expires'), DEFAULT_LIFETIME_S)
    .action(async (o: { as?: string; roles: string; email?: string; expires: number }, cmd: Command) => {
      const g = cmd.optsWithGlobals<{ user: string; json?: boolean }>();
      const user = o.as ?? g.user;
      const roles = o.roles.split(',').map((r) => r.trim()).filter(Boolean);
      const token = await mintDevToken({ user, roles, expiresIn: o.expires, email: o.email });
      const expires = new Date(Date.now() + o.expires * 1000).toISOString();
      if (g.json) print({ json: true, bars: false }, { token, user, roles, expires }, () => '');
      else if (process.stdout.isTTY) process.stdout.write(`${fields([['user', user], ['roles', roles.join(', ')], ['expires', expires]])}\n${token}\n`);
      else process.stdout.write(`${token}\n`); // for TOKEN=$(wcr token …)
    });
}
