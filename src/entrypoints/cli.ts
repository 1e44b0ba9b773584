import { parseArgs } from 'node:util';
import { readEnv } from '../config/env.js';
import { DEFAULT_LIFETIME, DevTokenError, findDevIssuer, mintDevToken, parseLifetime } from '../auth/dev-token.js';

const USAGE = `usage: npm run token -- --user NAME [--roles ROLE[,ROLE…]] [--expires LIFETIME] [--email ADDRESS] [--data-dir DIR]
       (node dist/src/entrypoints/cli.js mint-token …)

Mints an access token from the built-in development issuer (only when OIDC_ISSUER is unset) of the
server running on this machine, whatever PORT, HOST and DATA_DIR it was started with, and prints it.

  --user NAME         the token's subject and preferred_username (required)
  --roles LIST        comma-separated roles the server knows (default: user); an unknown one is an error
                      naming the known ones (the demo configuration: admin, operator, user, readonly)
  --expires LIFETIME  how long the token is valid: seconds, or 90m, 8h, 7d (default: ${DEFAULT_LIFETIME}, at most 30d)
  --email ADDRESS     an email claim (one more identity that owns objects)
  --data-dir DIR      the server's DATA_DIR, when several servers run or none does (default: DATA_DIR, else
                      the running server's, else ./data)
  -h, --help          this text

Example:
  curl -H "Authorization: Bearer $(npm run --silent token -- --user alice --roles admin)" http://127.0.0.1:8080/v1/services`;

class UsageError extends Error {}

async function mintToken(args: string[]): Promise<void> {
  let values;
  try {
    ({ values } = parseArgs({
      args,
      options: {
        user: { type: 'string' },
        roles: { type: 'string' },
        email: { type: 'string' },
        expires: { type: 'string', default: DEFAULT_LIFETIME },
        'data-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  if (!values.user) throw new UsageError('--user is required');
  const lifetimeSec = parseLifetime(values.expires);
  const found = await findDevIssuer({ env: readEnv(), dataDir: values['data-dir'] });
  const token = await mintDevToken(found, {
    user: values.user,
    roles: values.roles === undefined ? undefined : values.roles.split(',').map((r) => r.trim()).filter(Boolean),
    email: values.email,
    lifetimeSec,
  });
  process.stdout.write(`${token}\n`);
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === 'mint-token') await mintToken(rest);
  else if (command === '--help' || command === '-h') process.stdout.write(`${USAGE}\n`);
  else throw new UsageError(command ? `unknown command "${command}"` : 'no command');
} catch (err) {
  if (err instanceof UsageError) process.stderr.write(`${err.message}\n\n${USAGE}\n`);
  else if (err instanceof DevTokenError) process.stderr.write(`${err.message}\n`);
  else process.stderr.write(`cannot mint a token: ${(err as Error).message}\n`);
  process.exit(2);
}
