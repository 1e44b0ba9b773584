import { findDevIssuer, mintDevToken as mintFor } from '../auth/dev-token.js';
import { httpOrigin, localHost } from '../auth/dev-issuer-url.js';
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
 * Mints a token from the development issuer of the server on this machine,
 * found as `npm run token` finds it (`src/auth/dev-token.ts`: the running
 * server's record, whatever `PORT`, `HOST` and `DATA_DIR` it was started
 * with; never creating a key). Unknown roles are refused, naming the
 * server's roles.
 */
export async function mintDevToken(req: MintRequest): Promise<string> {
  if (!Number.isInteger(req.expiresIn) || req.expiresIn <= 0) throw new Error('the lifetime must be a positive number of seconds');
  const found = await findDevIssuer({ env: readEnv() });
  return mintFor(found, { user: req.user, roles: req.roles, email: req.email, lifetimeSec: req.expiresIn });
}

/** The server's address from the same configuration (`HOST`, `PORT`), on loopback when it listens on every interface. */
export function localServerUrl(config: AppConfig = loadConfig({ env: readEnv() })): string {
  return httpOrigin(localHost(config.server.host), config.server.port);
}
