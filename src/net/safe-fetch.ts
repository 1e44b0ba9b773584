import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { Agent, buildConnector, request } from 'undici';
import { AppError } from '../errors/app-error.js';
import { judgeAddress } from './address-policy.js';
import { describeFetchError } from './fetch-errors.js';

/** A connection refused by the address policy; carries the address for the log, never for the caller. */
export class ForbiddenAddressError extends Error {
  constructor(readonly address: string, readonly range: string) {
    super(`connection to ${address} (${range}) refused by the import address policy`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup that refuses a name when any of its answers is not public:
 * a name that mixes a public and a private answer is refused whole, so the
 * connection cannot be steered to the private one.
 */
function guardedLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    for (const a of addresses) {
      const verdict = judgeAddress(a.address);
      if (!verdict.allowed) return callback(new ForbiddenAddressError(verdict.normalised, verdict.range), []);
    }
    if (options.all) return callback(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

/**
 * The last line of the guard: after connecting (and after the TLS handshake),
 * the socket's actual remote address is judged. This covers IP literals (which
 * skip `lookup`), any resolver path the lookup hook does not see, and DNS
 * rebinding between a check and the connect. Exported for its test.
 */
const baseConnect = buildConnector({ lookup: guardedLookup as never });
export const guardedConnect: buildConnector.connector = (options, callback) => {
  baseConnect(options, (...args) => {
    const [err, socket] = args;
    if (err) return callback(err, null);
    const verdict = judgeAddress(socket!.remoteAddress ?? '');
    if (!verdict.allowed) {
      socket!.destroy();
      return callback(new ForbiddenAddressError(verdict.normalised, verdict.range), null);
    }
    return callback(null, socket!);
  });
};

const publicAgent = new Agent({ connect: guardedConnect });
const anyAgent = new Agent();

export interface SafeFetchOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  maxRedirects?: number;
  /** Receives raw errors (they are not shown to callers). */
  onError?: (err: unknown, url: string) => void;
}

export interface FetchedBody {
  url: URL;
  contentType: string | undefined;
  contentLength: number | undefined;
  body: Readable;
}

/** The URL as it may appear in messages and metadata: without user name and password. */
export function displayUrl(url: URL): string {
  if (!url.username && !url.password) return url.href;
  const copy = new URL(url.href);
  copy.username = '';
  copy.password = '';
  return copy.href;
}

const forbidden = (message: string) => new AppError('IMPORT_FORBIDDEN', message);
/** What an operator sets to allow it (a local trial), said where the refusal is read. */
const PRIVATE_HINT = ' (loopback and private networks are allowed only with the configuration key commands.importAllowPrivate: true)';
const fetchFailed = (message: string) => new AppError('IMPORT_FETCH_FAILED', message);

/**
 * GET of an http(s) URL for imports, streamed. Without `allowPrivate` it never
 * connects to an address outside the public unicast ranges (address-policy.ts),
 * whether named as a literal, through DNS or through a redirect: each hop's
 * literal is checked, every DNS answer is checked, and the connected socket's
 * remote address is checked. Errors are AppErrors with plain messages:
 * 403 IMPORT_FORBIDDEN, 502 IMPORT_FETCH_FAILED; the raw error goes to `onError`.
 *
 * The caller owns the returned body and must consume or destroy it.
 */
export async function safeFetch(start: URL, opts: SafeFetchOptions): Promise<FetchedBody> {
  let url = start;
  for (let hop = 0; hop <= (opts.maxRedirects ?? 5); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw forbidden(`only http(s) URLs can be imported, not ${url.protocol}`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!opts.allowPrivate && isIP(host) && !judgeAddress(host).allowed) {
      throw forbidden(`importing from ${url.hostname} (not a public address) is not allowed${PRIVATE_HINT}`);
    }
    let res;
    try {
      res = await request(url, {
        dispatcher: opts.allowPrivate ? anyAgent : publicAgent,
        signal: AbortSignal.timeout(opts.timeoutMs),
        headersTimeout: Math.min(opts.timeoutMs, 60_000),
      });
    } catch (err) {
      opts.onError?.(err, displayUrl(url));
      for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
        if (e instanceof ForbiddenAddressError) throw forbidden(`importing from ${url.hostname} is not allowed: it is not a public address${PRIVATE_HINT}`);
      }
      throw fetchFailed(`cannot fetch ${displayUrl(url)}: ${describeFetchError(err)}`);
    }
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      // frees the connection; a body that fails while being drained is of no interest
      await res.body.dump().catch(() => undefined);
      try {
        url = new URL(location, url);
      } catch {
        throw fetchFailed(`${displayUrl(url)} redirects to an invalid URL`);
      }
      continue;
    }
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw fetchFailed(`fetching ${displayUrl(url)} answered ${res.statusCode}`);
    }
    const type = res.headers['content-type'];
    const length = Number(res.headers['content-length']);
    return {
      url,
      contentType: typeof type === 'string' ? type : undefined,
      contentLength: Number.isFinite(length) && length >= 0 ? length : undefined,
      body: res.body,
    };
  }
  throw fetchFailed(`too many redirects from ${displayUrl(start)}`);
}
