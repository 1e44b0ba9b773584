import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { AppError } from '../errors/app-error.js';

/** Loopback, private, link-local, CGNAT and unspecified addresses (IPv4 and IPv6). */
export function isPrivateAddress(ip: string): boolean {
  const v4mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (v4mapped) return isPrivateAddress(v4mapped[1]!);
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31)
      || (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127);
  }
  const low = ip.toLowerCase();
  return low === '::1' || low === '::' || low.startsWith('fc') || low.startsWith('fd') || /^fe[89ab]/.test(low);
}

class PrivateAddressError extends Error {}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup for outgoing connections that refuses private addresses. It runs
 * at connect time, on the address actually used, so a name that resolves to a
 * public address when checked and a private one when connected (DNS rebinding)
 * is caught too.
 */
function guardedLookup(hostname: string, options: { all?: boolean; family?: number }, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, []);
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) return callback(new PrivateAddressError(`${hostname} resolves to ${bad.address}, a private or loopback address`), []);
    if (options.all) return callback(null, addresses);
    return callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}

export interface SafeFetchOptions {
  allowPrivate: boolean;
  timeoutMs: number;
  maxRedirects?: number;
}

export interface FetchedBody {
  url: URL;
  contentType: string | undefined;
  contentLength: number | undefined;
  body: Readable;
}

const publicAgent = new Agent({ connect: { lookup: guardedLookup as never } });
const anyAgent = new Agent();

/**
 * GET of an http(s) URL for imports, streamed. Without `allowPrivate` it never
 * connects to a private or loopback address, whether named directly, through
 * DNS, or through a redirect (each hop is checked; at most `maxRedirects`).
 * Errors are AppErrors: 403 IMPORT_FORBIDDEN, 502 IMPORT_FETCH_FAILED.
 */
export async function safeFetch(start: URL, opts: SafeFetchOptions): Promise<FetchedBody> {
  let url = start;
  for (let hop = 0; hop <= (opts.maxRedirects ?? 5); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new AppError(403, 'IMPORT_FORBIDDEN', `only http(s) URLs can be imported, not ${url.protocol}`);
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!opts.allowPrivate && isIP(host) && isPrivateAddress(host)) {
      throw new AppError(403, 'IMPORT_FORBIDDEN', `importing from ${host} (a private or loopback address) is not allowed`);
    }
    let res;
    try {
      res = await request(url, {
        dispatcher: opts.allowPrivate ? anyAgent : publicAgent,
        signal: AbortSignal.timeout(opts.timeoutMs),
        headersTimeout: Math.min(opts.timeoutMs, 60_000),
      });
    } catch (err) {
      for (let e: unknown = err; e; e = (e as { cause?: unknown }).cause) {
        if (e instanceof PrivateAddressError) throw new AppError(403, 'IMPORT_FORBIDDEN', `importing from ${url.hostname} is not allowed: ${e.message}`);
      }
      throw new AppError(502, 'IMPORT_FETCH_FAILED', `cannot fetch ${url.href}: ${(err as Error).message}`);
    }
    const location = res.headers.location;
    if (res.statusCode >= 300 && res.statusCode < 400 && typeof location === 'string') {
      res.body.resume(); // drain and free the connection
      url = new URL(location, url);
      continue;
    }
    if (res.statusCode !== 200) {
      res.body.resume();
      throw new AppError(502, 'IMPORT_FETCH_FAILED', `fetching ${url.href} answered ${res.statusCode}`);
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
  throw new AppError(502, 'IMPORT_FETCH_FAILED', `too many redirects from ${start.href}`);
}
