import { InvalidArgumentError, type Command } from 'commander';
import { ApiClient } from './http.js';
import type { Output } from './output.js';
import { DEFAULT_LIFETIME_S, localServerUrl, mintDevToken } from './token-source.js';

/** The options every command takes (set on the program, read with `optsWithGlobals`). */
export interface GlobalOptions {
  url?: string;
  token?: string;
  user: string;
  json?: boolean;
}

export interface CliContext {
  api: ApiClient;
  out: Output;
}

/**
 * The API client and output of a command: `--url` (default: the local
 * server's address from its configuration), `--token` (default: one minted
 * for the local development issuer, `--user` with the admin role, once per
 * run), `--json`.
 */
export function contextOf(cmd: Command): CliContext {
  const o = cmd.optsWithGlobals<GlobalOptions>();
  let minted: Promise<string> | undefined;
  const token = () => (o.token ? Promise.resolve(o.token) : (minted ??= mintDevToken({ user: o.user, roles: ['admin'], expiresIn: DEFAULT_LIFETIME_S })));
  const json = o.json === true;
  return {
    api: new ApiClient(o.url ?? localServerUrl(), token),
    out: { json, bars: !json && process.stderr.isTTY === true },
  };
}

/** Waits `ms`, for polling watches. */
export const pause = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A positive integer option, or an error naming the option. */
export function positiveInt(name: string) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(`${name} must be a positive whole number`);
    return n;
  };
}
