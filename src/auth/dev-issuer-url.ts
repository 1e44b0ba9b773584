import type { AppConfig } from '../config/schema.js';

/** `http://host:port`, with IPv6 literals bracketed. */
export function httpOrigin(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Where a client on this machine reaches a listener: a wildcard bind is reached on loopback. */
export const localHost = (host: string) => (['0.0.0.0', '::', ''].includes(host) ? '127.0.0.1' : host);

/** The development issuer's URL: configured, else this server's address. */
export function devIssuerUrl(config: AppConfig, port = config.server.port): string {
  if (config.auth.devIssuerUrl) return config.auth.devIssuerUrl.replace(/\/$/, '');
  return `${httpOrigin(localHost(config.server.host), port)}/dev-issuer`;
}
