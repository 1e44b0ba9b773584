import { parseArgs } from 'node:util';
import { readEnv } from '../config/env.js';
import { loadConfig } from '../config/load.js';
import { DevIssuer } from '../auth/dev-issuer.js';
import { devIssuerUrl } from '../runtime/build-services.js';

const USAGE = `usage: cli mint-token --user NAME [--roles admin,operator] [--email E] [--expires SECONDS]

Mints an access token from the built-in development issuer (only when OIDC_ISSUER is unset).
Uses the same DATA_DIR, HOST and PORT as the server.`;

async function mintToken(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      user: { type: 'string' },
      roles: { type: 'string', default: 'user' },
      email: { type: 'string' },
      expires: { type: 'string', default: '3600' },
    },
  });
  if (!values.user) throw new Error(USAGE);
  const config = loadConfig({ env: readEnv() });
  if (config.auth.issuer) throw new Error('OIDC_ISSUER is set: get tokens from that identity provider; the development issuer is off');
  const issuer = await DevIssuer.open(config.dataDir, devIssuerUrl(config));
  const expiresIn = Number(values.expires);
  if (!Number.isInteger(expiresIn) || expiresIn <= 0) throw new Error('--expires must be a positive number of seconds');
  const token = await issuer.mint({
    user: values.user,
    roles: values.roles.split(',').map((r) => r.trim()).filter(Boolean),
    email: values.email,
    expiresIn,
    audience: config.auth.audience,
  });
  process.stdout.write(`${token}\n`);
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === 'mint-token') await mintToken(rest);
  else throw new Error(USAGE);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
