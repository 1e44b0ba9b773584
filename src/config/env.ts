/**
 * The only module that reads `process.env`. Everything else receives the typed
 * configuration built by `loadConfig`.
 */
export interface EnvOverrides {
  PORT?: string;
  HOST?: string;
  DATA_DIR?: string;
  DATABASE_URL?: string;
  REDIS_URL?: string;
  OIDC_ISSUER?: string;
  OIDC_AUDIENCE?: string;
  ROLES_CLAIM?: string;
  ROLE?: string;
  CONFIG?: string;
  LOG_LEVEL?: string;
  LOG_FORMAT?: string;
  /** Where a running server records itself for local tools (`npm run token`); not configuration. */
  XDG_RUNTIME_DIR?: string;
}

const KEYS = [
  'PORT', 'HOST', 'DATA_DIR', 'DATABASE_URL', 'REDIS_URL', 'OIDC_ISSUER',
  'OIDC_AUDIENCE', 'ROLES_CLAIM', 'ROLE', 'CONFIG', 'LOG_LEVEL', 'LOG_FORMAT', 'XDG_RUNTIME_DIR',
] as const;

/** Snapshot of the environment variables the runtime understands (empty strings count as unset). */
export function readEnv(source: NodeJS.ProcessEnv = process.env): EnvOverrides {
  const env: EnvOverrides = {};
  for (const key of KEYS) {
    const value = source[key];
    if (value !== undefined && value !== '') env[key] = value;
  }
  return env;
}
