import path from 'node:path';
import type { EnvOverrides } from '../config/env.js';
import { ConfigError, loadConfig } from '../config/load.js';
import type { AppConfig } from '../config/schema.js';
import { DevIssuer } from './dev-issuer.js';
import { readIssuerRecord, runningServers, type IssuerRecord } from './dev-issuer-record.js';
import { devIssuerUrl, httpOrigin, localHost } from './dev-issuer-url.js';

/**
 * Minting development tokens for a server on this machine, as `npm run token`
 * and `wcr token` do: the server's issuer, key, roles and audience are found
 * the way the server recorded them, whatever PORT, HOST and DATA_DIR it was
 * started with, and nothing is ever created (no key, no directory).
 */

/** A token cannot be minted; the message says what to set. */
export class DevTokenError extends Error {
  override readonly name = 'DevTokenError';
}

/** The lifetime of a token when none is asked for. */
export const DEFAULT_LIFETIME = '1h';
/** The longest lifetime a development token may have. */
export const MAX_LIFETIME_SEC = 30 * 86_400;

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** `3600`, `90s`, `30m`, `8h`, `7d` to seconds. */
export function parseLifetime(text: string): number {
  const m = /^(\d+)([smhd]?)$/.exec(text.trim());
  const sec = m ? Number(m[1]) * UNITS[m[2] || 's']! : NaN;
  if (!Number.isSafeInteger(sec) || sec <= 0) throw new DevTokenError(`--expires: "${text}" is not a lifetime (seconds, or a number with s, m, h or d: 3600, 90m, 8h, 7d)`);
  if (sec > MAX_LIFETIME_SEC) throw new DevTokenError(`--expires: at most ${MAX_LIFETIME_SEC / 86_400}d for a development token`);
  return sec;
}

/** The development issuer of a server, and what it accepts. */
export interface FoundIssuer {
  issuer: DevIssuer;
  dataDir: string;
  /** Base URL of the server's API. */
  api: string;
  /** The role names the server knows. */
  roles: string[];
  audience?: string;
  /** Whether that server runs now (false: found from a record or the configuration of a stopped one). */
  running: boolean;
}

export interface FindOptions {
  /** The environment of the tool (`readEnv()`). */
  env: EnvOverrides;
  /** A data directory given on the command line (over DATA_DIR). */
  dataDir?: string;
  /** Directory of the YAML files (default `<cwd>/config`). */
  configDir?: string;
}

const describe = (r: IssuerRecord) => `  ${r.api} (pid ${r.pid}, DATA_DIR=${r.dataDir})`;

/**
 * Finds the development issuer to mint for. A data directory given (option or
 * DATA_DIR) is used; otherwise a running server on this machine is: the one on
 * the configured data directory, else the only one that runs. With none
 * running, the configured data directory's key (a stopped server's) is used.
 */
export async function findDevIssuer(opts: FindOptions): Promise<FoundIssuer> {
  if (opts.env.OIDC_ISSUER) {
    throw new DevTokenError(`OIDC_ISSUER is set to ${opts.env.OIDC_ISSUER}: get tokens from that identity provider; the development issuer is off`);
  }
  // The configuration is needed only when no running server says what it uses (outside a checkout there is none to load).
  let config: AppConfig | undefined;
  let configError: DevTokenError | undefined;
  try {
    config = loadConfig({ env: opts.env, configDir: opts.configDir });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    configError = new DevTokenError(`configuration error: ${err.message}`);
  }
  if (config?.auth.issuer) {
    throw new DevTokenError(`auth.issuer is set to ${config.auth.issuer}: get tokens from that identity provider; the development issuer is off`);
  }
  const given = opts.dataDir ?? opts.env.DATA_DIR;
  const running = await runningServers(opts.env.XDG_RUNTIME_DIR);
  let dataDir: string | undefined;
  let record: IssuerRecord | undefined;
  if (given !== undefined) {
    dataDir = path.resolve(given);
    record = running.find((r) => r.dataDir === dataDir);
  } else {
    record = running.find((r) => r.dataDir === config?.dataDir) ?? (running.length === 1 ? running[0] : undefined);
    if (!record && running.length > 1) {
      throw new DevTokenError(`several servers with a development issuer run on this machine; set DATA_DIR (or --data-dir) to the one to mint for:\n${running.map(describe).join('\n')}`);
    }
    dataDir = record?.dataDir ?? config?.dataDir;
  }
  const isRunning = record !== undefined;
  if (dataDir !== undefined) record ??= await readIssuerRecord(dataDir);
  if (!record && !config) throw configError!;
  const issuerUrl = record?.issuer ?? devIssuerUrl(config!);
  const issuer = dataDir === undefined ? undefined : await DevIssuer.openExisting(dataDir, issuerUrl);
  if (!issuer || dataDir === undefined) {
    const where = path.join(dataDir ?? '.', 'dev-issuer', 'key.json');
    throw new DevTokenError(given !== undefined
      ? `no development issuer key at ${where}: DATA_DIR (or --data-dir) must be the data directory of a server that has started (with OIDC_ISSUER unset)`
      : `no running server with a development issuer was found on this machine, and ${where} does not exist: start the server (scripts/up), or set DATA_DIR to the data directory it was started with`);
  }
  return {
    issuer, dataDir,
    api: record?.api ?? httpOrigin(localHost(config!.server.host), config!.server.port),
    roles: record?.roles ?? Object.keys(config!.auth.roles),
    audience: record ? record.audience : config!.auth.audience,
    running: isRunning,
  };
}

export interface DevTokenRequest {
  user: string;
  /** Role names; each must be one the server knows. Default: `user`. */
  roles?: string[];
  email?: string;
  /** Seconds (default: `DEFAULT_LIFETIME`). */
  lifetimeSec?: number;
}

/** Mints a token the found server accepts; an unknown role is refused here, not later as a 403. */
export async function mintDevToken(found: FoundIssuer, req: DevTokenRequest): Promise<string> {
  const roles = req.roles ?? ['user'];
  if (!req.user.trim()) throw new DevTokenError('--user: a user name is needed');
  if (roles.length === 0) throw new DevTokenError(`--roles: at least one role; the server's roles are ${found.roles.join(', ')}`);
  const known = new Set(found.roles);
  const unknown = roles.filter((r) => !known.has(r));
  if (unknown.length > 0) {
    throw new DevTokenError(`--roles: unknown role${unknown.length > 1 ? 's' : ''} ${unknown.map((r) => `"${r}"`).join(', ')}; the server's roles are ${found.roles.join(', ')}`);
  }
  return found.issuer.mint({
    user: req.user, roles, email: req.email, audience: found.audience,
    expiresIn: req.lifetimeSec ?? parseLifetime(DEFAULT_LIFETIME),
  });
}
