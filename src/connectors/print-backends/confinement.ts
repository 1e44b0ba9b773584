import { lookup } from 'node:dns/promises';
import { lstat, realpath } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import tls from 'node:tls';
import path from 'node:path';
import type ipaddr from 'ipaddr.js';
import type { AppConfig } from '../../config/schema.js';
import { classifyAddress, parseAddressRange, type ClassifiedAddress } from '../../net/address-policy.js';

/**
 * Where printers may connect: the one rule every print backend goes through
 * (the registry wraps each backend in it, network backends connect through
 * `connect`, the directory backend writes where `directory` says). Printers
 * are configured by admins, but jobs are sent by anybody: a printer aimed at
 * the service's own Redis turns a plain user's job body into Redis commands,
 * and a directory printer at `/etc` is a file write anywhere (CUPS ships
 * `file:` devices disabled for the same reason). So:
 *
 * - a directory printer only under `print.confinement.directoryRoots`
 *   (default: DATA_DIR), judged on the real path (symlinks resolved; a
 *   dangling link is refused); an empty list turns directory printers off;
 * - a network printer (socket, IPP, IPPS, LPR) never at a
 *   link-local (169.254.0.0/16, fe80::/10: cloud metadata), unspecified,
 *   multicast or broadcast address, nor at the service's own Redis,
 *   PostgreSQL or API address (same port, and the same address or both
 *   addresses this host's: loopback, the unspecified address, an address of
 *   a local interface); private and loopback addresses stay allowed;
 * - then `print.confinement.deny` (an address in a listed range, on a
 *   listed port or any) and, when not empty, `print.confinement.allow` (the
 *   address must be in one of its ranges, on a listed port or any): an
 *   operator tightens the rule, never loosens it.
 *
 * Names are resolved and every address they give is judged (a name with one
 * refused address is refused whole); addresses are normalised first by the
 * import policy's classifier (`src/net/address-policy.ts`: IPv4-mapped and
 * other IPv6 forms that carry an IPv4 address count as that address). The
 * rule runs when a printer is created or changed (400
 * `CONNECTION_FORBIDDEN`) and again before every connect and device check,
 * since a name's addresses, a symlink or the rules may change; `connect`
 * opens the connection to the address it judged and judges the address the
 * socket reached once more.
 */

/** What a backend talks to, for the rule to judge. */
export type PrintTarget =
  | { kind: 'directory'; path: string }
  | { kind: 'network'; host: string; port: number };

/** A range of addresses (`10.0.0.0/8`, `fd00::/8`, a single address), optionally only some ports. */
export interface AddressRule {
  cidr: string;
  ports?: readonly number[];
}

/** An address of the service itself that no printer may name. */
export interface OwnEndpoint {
  what: string;
  host: string;
  port: number;
}

export interface ConfinementRules {
  /** Absolute directories under which directory printers may write. */
  directoryRoots: readonly string[];
  /** Ranges a network printer must be in (empty: any the rest allows); a string is a range on every port. */
  allow: readonly (AddressRule | string)[];
  /** Ranges a network printer must not be in. */
  deny: readonly (AddressRule | string)[];
  own: readonly OwnEndpoint[];
}

/** A target the rule refuses; its message is meant for people (the API's 400, the job's message) and names the rule. */
export class ConfinementError extends Error {
  override readonly name = 'ConfinementError';
}

/** The connect did not finish in time (`code` as a socket's timeout, so callers treat both alike). */
export class ConnectTimeout extends Error {
  override readonly name = 'ConnectTimeout';
  readonly code = 'ETIMEDOUT';
}

/** Ranges no printer is ever at, whatever the configuration says (ipaddr.js's range names, after normalisation). */
const NEVER: ReadonlyMap<string, string> = new Map([
  ['linkLocal', 'a link-local address (169.254.0.0/16, fe80::/10, where cloud metadata services answer)'],
  ['unspecified', 'the unspecified address'],
  ['multicast', 'a multicast address'],
  ['broadcast', 'the broadcast address'],
]);

interface ParsedRule {
  range: [ipaddr.IPv4 | ipaddr.IPv6, number];
  ports?: ReadonlySet<number>;
}

const parseRule = (rule: AddressRule | string): ParsedRule => {
  const r = typeof rule === 'string' ? { cidr: rule } : rule;
  return { range: parseAddressRange(r.cidr), ...(r.ports ? { ports: new Set(r.ports) } : {}) };
};

const matches = (rule: ParsedRule, c: ClassifiedAddress, port: number) =>
  c.addr.kind() === rule.range[0].kind() && c.addr.match(rule.range) && (!rule.ports || rule.ports.has(port));

const display = (c: ClassifiedAddress, port: number) => (c.addr.kind() === 'ipv6' ? `[${c.normalised}]:${port}` : `${c.normalised}:${port}`);

const errCode = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;

interface OwnAddress {
  what: string;
  addr: ClassifiedAddress;
  port: number;
}

/** Every address of a name (the resolver's order); IP literals are not looked up. */
export type Resolve = (host: string) => Promise<string[]>;
const resolveAll: Resolve = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

/** The real path of `p`, also when its last components do not exist yet (they are taken as written); a dangling symlink is refused. */
async function realPathLenient(p: string): Promise<string> {
  const missing: string[] = [];
  for (let cur = p; ;) {
    try {
      return path.join(await realpath(cur), ...missing.reverse());
    } catch (err) {
      if (errCode(err) !== 'ENOENT') throw err;
      // a link whose target is missing could be pointed anywhere before the next look
      if (await lstat(cur).then((s) => s.isSymbolicLink(), () => false)) throw new ConfinementError('the directory is a link to a missing target');
      const parent = path.dirname(cur);
      if (parent === cur) throw err;
      missing.push(path.basename(cur));
      cur = parent;
    }
  }
}

const within = (root: string, p: string) => {
  const rel = path.relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
};

export class PrintConfinement {
  private readonly allow: ParsedRule[];
  private readonly deny: ParsedRule[];

  constructor(private readonly rules: ConfinementRules, private readonly resolve: Resolve = resolveAll) {
    this.allow = rules.allow.map(parseRule);
    this.deny = rules.deny.map(parseRule);
  }

  /** Judges a target: resolves without error when allowed; `ConfinementError` when refused, the resolver's error when a name does not resolve. */
  async check(target: PrintTarget): Promise<void> {
    if (target.kind === 'directory') await this.directory(target.path);
    else await this.addresses(target.host, target.port);
  }

  /** The real path of a directory printer's directory when it is under a root (the path to write to); `ConfinementError` otherwise. */
  async directory(dir: string): Promise<string> {
    if (this.rules.directoryRoots.length === 0) throw new ConfinementError('directory printers are not allowed here (print.confinement.directoryRoots is empty)');
    let real: string;
    try {
      real = await realPathLenient(path.resolve(dir));
    } catch (err) {
      if (err instanceof ConfinementError) throw new ConfinementError(`the directory is not allowed for printers: ${err.message}`);
      throw new ConfinementError(`the directory is not allowed for printers: it cannot be checked (${errCode(err) ?? 'error'})`);
    }
    for (const root of this.rules.directoryRoots) {
      const r = await realPathLenient(path.resolve(root)).catch(() => undefined);
      if (r !== undefined && within(r, real)) return real;
    }
    throw new ConfinementError('the directory is not allowed for printers: it is not under a directory of print.confinement.directoryRoots');
  }

  /**
   * Every address `host` resolves to, each judged for `port` (a name with
   * one refused address is refused whole); the first is where a connection
   * goes. `ConfinementError` when refused; the resolver's error otherwise.
   */
  async addresses(host: string, port: number): Promise<string[]> {
    return (await this.admit(host, port)).found;
  }

  private async admit(host: string, port: number): Promise<{ found: string[]; own: OwnAddress[] }> {
    const found = classifyAddress(host) ? [host] : await this.resolve(host);
    if (found.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
    const own = await this.ownAddresses();
    for (const a of found) this.judge(a, port, own);
    return { found, own };
  }

  /**
   * A TCP connection to `host:port` for a network backend: the name is
   * resolved and judged (within `timeoutMs`, like the connect), the socket
   * opened to the judged address, and the address it reached judged again.
   * Rejects with `ConfinementError` before any connect when refused, with
   * `ConnectTimeout`, the signal's reason, or the socket's error. With
   * `tls` (IPPS) the TLS handshake runs over that judged connection, within
   * the same time, the certificate checked against `host` unless
   * `rejectUnauthorized` is false.
   */
  connect(host: string, port: number, opts: { signal: AbortSignal; timeoutMs: number; tls?: { rejectUnauthorized?: boolean } }): Promise<net.Socket> {
    const { signal, timeoutMs } = opts;
    return new Promise((resolve, reject) => {
      signal.throwIfAborted();
      let socket: net.Socket | undefined;
      let secure: tls.TLSSocket | undefined;
      let settled = false;
      const done = (err: unknown, s?: net.Socket) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        socket?.off('error', done);
        secure?.off('error', done);
        if (s) return resolve(s);
        secure?.destroy();
        socket?.destroy();
        reject(err);
      };
      const timer = setTimeout(() => done(new ConnectTimeout(`connect timed out after ${timeoutMs} ms`)), timeoutMs);
      const onAbort = () => done(signal.reason ?? new Error('aborted'));
      signal.addEventListener('abort', onAbort, { once: true });
      this.admit(host, port).then(({ found, own }) => {
        if (settled) return;
        const s = net.connect({ host: found[0]!, port, noDelay: false });
        socket = s;
        s.once('error', done);
        s.once('connect', () => {
          try {
            this.judge(s.remoteAddress ?? '', port, own);
          } catch (err) {
            return done(err);
          }
          if (!opts.tls) return done(undefined, s);
          const t = tls.connect({ socket: s, servername: net.isIP(host) ? undefined : host, rejectUnauthorized: opts.tls.rejectUnauthorized ?? true, ALPNProtocols: ['http/1.1'] });
          secure = t;
          t.once('error', done);
          t.once('secureConnect', () => done(undefined, t));
        });
      }, done);
    });
  }

  /**
   * An HTTP/1.1 request (IPP travels as HTTP POSTs) over `socket`, a
   * connection `connect` opened and judged: the request uses that socket
   * and nothing else (no agent, no pool, no lookup of its own). The caller
   * sets the `host` header, writes the body and reads the response.
   */
  static httpRequest(socket: net.Socket, opts: { method: string; path: string; headers: Record<string, string> }): http.ClientRequest {
    return http.request({ method: opts.method, path: opts.path, headers: opts.headers, setHost: false, createConnection: () => socket });
  }

  private judge(raw: string, port: number, own: OwnAddress[]): void {
    const c = classifyAddress(raw);
    if (!c) throw new ConfinementError(`"${raw.slice(0, 100)}" is not an address a printer can be reached at`);
    const at = display(c, port);
    const never = NEVER.get(c.range);
    if (never) throw new ConfinementError(`${at} is not allowed for printers: it is ${never}`);
    for (const o of own) {
      if (o.port === port && sameHost(o.addr, c)) throw new ConfinementError(`${at} is not allowed for printers: it is this service's own ${o.what}`);
    }
    if (this.deny.some((r) => matches(r, c, port))) throw new ConfinementError(`${at} is not allowed for printers: print.confinement.deny lists it`);
    if (this.allow.length > 0 && !this.allow.some((r) => matches(r, c, port))) {
      throw new ConfinementError(`${at} is not allowed for printers: print.confinement.allow does not list it`);
    }
  }

  /** The service's own endpoints, resolved now (a name that does not resolve cannot be reached either, and is left out). */
  private async ownAddresses(): Promise<OwnAddress[]> {
    const out: OwnAddress[] = [];
    for (const o of this.rules.own) {
      const found = classifyAddress(o.host) ? [o.host] : await this.resolve(o.host).catch(() => []);
      for (const a of found) {
        const addr = classifyAddress(a);
        if (addr) out.push({ what: o.what, addr, port: o.port });
      }
    }
    return out;
  }
}

/** This host's addresses: loopback, the unspecified address (a wildcard bind) and every local interface's. */
function isThisHost(c: ClassifiedAddress): boolean {
  if (c.range === 'loopback' || c.range === 'unspecified') return true;
  return Object.values(os.networkInterfaces()).some((list) => list?.some((i) => classifyAddress(i.address)?.normalised === c.normalised));
}

/** Whether a connection to `b` may reach what listens at `a` (same port assumed). */
const sameHost = (a: ClassifiedAddress, b: ClassifiedAddress) => a.normalised === b.normalised || (isThisHost(a) && isThisHost(b));

/**
 * The rules from the configuration (`print.confinement`, roots relative to
 * DATA_DIR) and the service's own endpoints: Redis, PostgreSQL (when not
 * embedded) and the API at `apiPort` (the port it listens on).
 */
export function confinementRules(config: AppConfig, apiPort: number): ConfinementRules {
  const c = config.print.confinement;
  const own: OwnEndpoint[] = [];
  const add = (what: string, url: string | undefined, defaultPort: number) => {
    if (!url) return;
    try {
      const u = new URL(url);
      if (u.hostname) own.push({ what, host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port: Number(u.port || defaultPort) });
    } catch {
      // a URL the schema took but this cannot read names no TCP endpoint to protect
    }
  };
  add('Redis', config.redis.url, 6379);
  add('PostgreSQL', config.database.url, 5432);
  if (apiPort > 0) own.push({ what: 'API', host: config.server.host, port: apiPort });
  return {
    directoryRoots: c.directoryRoots.map((r) => path.resolve(config.dataDir, r)),
    allow: c.allow,
    deny: c.deny,
    own,
  };
}
