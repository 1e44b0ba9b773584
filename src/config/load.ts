import { readFileSync, readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import { configSchema, type AppConfig } from './schema.js';
import type { EnvOverrides } from './env.js';

/** Thrown when configuration is invalid; the message names every bad key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

type Plain = Record<string, unknown>;
const isPlain = (v: unknown): v is Plain => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Objects merge key by key; arrays and scalars replace. Keys are defined, never assigned, so `__proto__` stays a key. */
export function deepMerge(base: Plain, over: Plain): Plain {
  const out: Plain = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = Object.hasOwn(out, key) ? out[key] : undefined;
    Object.defineProperty(out, key, { value: isPlain(prev) && isPlain(value) ? deepMerge(prev, value) : value, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

function readYaml(file: string): Plain {
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigError(`${file}: ${(err as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (!isPlain(doc)) throw new ConfigError(`${file}: the top level must be a mapping`);
  return doc;
}

function envLayer(env: EnvOverrides): Plain {
  const layer: Plain = {};
  const set = (dotted: string, value: string | undefined) => {
    if (value === undefined) return;
    const keys = dotted.split('.');
    let node = layer;
    for (const k of keys.slice(0, -1)) node = (node[k] ??= {}) as Plain;
    node[keys.at(-1)!] = value;
  };
  set('server.port', env.PORT);
  set('server.host', env.HOST);
  set('dataDir', env.DATA_DIR);
  set('database.url', env.DATABASE_URL);
  set('redis.url', env.REDIS_URL);
  set('auth.issuer', env.OIDC_ISSUER);
  set('auth.audience', env.OIDC_AUDIENCE);
  set('auth.rolesClaim', env.ROLES_CLAIM);
  set('role', env.ROLE);
  set('logLevel', env.LOG_LEVEL);
  set('logFormat', env.LOG_FORMAT);
  return layer;
}

const ENV_NAMES: Record<string, string> = {
  'server.port': 'PORT', 'server.host': 'HOST', dataDir: 'DATA_DIR', 'database.url': 'DATABASE_URL',
  'redis.url': 'REDIS_URL', 'auth.issuer': 'OIDC_ISSUER', 'auth.audience': 'OIDC_AUDIENCE',
  'auth.rolesClaim': 'ROLES_CLAIM', role: 'ROLE', logLevel: 'LOG_LEVEL', logFormat: 'LOG_FORMAT',
};

function describe(issues: z.core.$ZodIssue[]): string {
  return issues.map((issue) => {
    const key = issue.path.map(String).join('.') || '(root)';
    const env = ENV_NAMES[key];
    return `  ${key}${env ? ` (${env})` : ''}: ${issue.message}`;
  }).join('\n');
}

export interface LoadOptions {
  env?: EnvOverrides;
  /** Directory holding the YAML files; default `<cwd>/config`. */
  configDir?: string;
  /** Extra layer applied last (tests). */
  overrides?: Plain;
}

/**
 * Builds the configuration: `config/*.yaml` in name order, then the file named
 * by `CONFIG`, then environment variables, then explicit overrides. Fails with
 * a ConfigError naming each bad key.
 */
export function loadConfig(opts: LoadOptions = {}): AppConfig {
  const env = opts.env ?? {};
  const dir = opts.configDir ?? path.resolve('config');
  let merged: Plain = {};
  if (existsSync(dir)) {
    for (const file of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
      merged = deepMerge(merged, readYaml(path.join(dir, file)));
    }
  }
  if (env.CONFIG) {
    if (!existsSync(env.CONFIG)) throw new ConfigError(`CONFIG: file ${env.CONFIG} does not exist`);
    merged = deepMerge(merged, readYaml(env.CONFIG));
  }
  merged = deepMerge(merged, envLayer(env));
  if (opts.overrides) merged = deepMerge(merged, opts.overrides);
  const result = configSchema.safeParse(merged);
  if (!result.success) throw new ConfigError(`invalid configuration:\n${describe(result.error.issues)}`);
  const config = result.data;
  config.dataDir = path.resolve(config.dataDir);
  if (config.database.url === undefined && config.role !== 'all') {
    throw new ConfigError('role (ROLE): the embedded database (no DATABASE_URL) is single-process, so only role "all" can use it');
  }
  if (Object.keys(config.auth.roles).length === 0) throw new ConfigError('auth.roles: at least one role must be configured');
  if (config.auth.defaultRole && !Object.hasOwn(config.auth.roles, config.auth.defaultRole)) {
    throw new ConfigError(`auth.defaultRole: "${config.auth.defaultRole}" is not one of auth.roles (${Object.keys(config.auth.roles).join(', ')})`);
  }
  return config;
}
