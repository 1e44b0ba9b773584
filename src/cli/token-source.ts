import { DevIssuer } from '../auth/dev-issuer.js';
import { loadConfig } from '../config/load.js';
import { readEnv } from '../config/env.js';
import type { AppConfig } from '../config/schema.js';

export interface MintRequest {
  user: string;
  roles: string[];
  /** Seconds. */
  expiresIn: number;
  email?: string;
}

/** The lifetime of a token `wcr` mints (seconds) unless told otherwise. */
export const DEFAULT_LIFETIME_S = 3600;

/**
 * Mints a token from the local development issuer, found from the
 * configuration the way the server finds it (`DATA_DIR`, `HOST`, `PORT`,
 * `CONFIG`). The one place the CLI mints: it calls the minting code of
 * `src/auth/`, so it can move to a shared minting module without touching
 * the commands. Unknown roles are refused, naming the configured ones.
 */
export async function mintDevToken(req: MintRequest): Promise<string> {
  const config = loadConfig({ env: readEnv() });
  if (config.auth.issuer) throw new Error('OIDC_ISSUER is set: get a token from that identity provider and pass it with --token');
  const known = Object.keys(config.auth.roles);
  const unknown = req.roles.filter((r) => !Object.hasOwn(config.auth.roles, r));
  if (unknown.length > 0) throw new Error(`unknown role${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}: the configured roles are ${known.join(', ')}`);
  if (!Number.isInteger(req.expiresIn) || req.expiresIn <= 0) throw new Error('the lifetime must be a positive number of seconds');
  const issuer = await DevIssuer.open(config.dataDir, cliDevIssuerUrl(config));
  return issuer.mint({ user: req.user, roles: req.roles, email: req.email, expiresIn: req.expiresIn, audience: config.auth.audience });
}

/** The server's address from the same configuration (`HOST`, `PORT`), on loopback when it listens on every interface. */
export function localServerUrl(config: AppConfig = loadConfig({ env: readEnv() })): string {
  const host = ['0.0.0.0', '::', ''].includes(config.server.host) ? '127.0.0.1' : config.server.host;
  return `http://${host.includes(':') ? `[${host}]` : host}:${config.server.port}`;
}

/**
 * The development issuer's URL by the rule of `devIssuerUrl`
 * (runtime/build-services.ts), not imported from there: that module pulls in
 * the whole runtime (every area, sharp, PDF.js), seconds of start-up for
 * each command. `test/cli/token-source.test.ts` holds the two together.
 */
export function cliDevIssuerUrl(config: AppConfig): string {
  if (config.auth.devIssuerUrl) return config.auth.devIssuerUrl.replace(/\/$/, '');
  return `${localServerUrl(config)}/dev-issuer`;
}
