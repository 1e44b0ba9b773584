import * as oidc from 'openid-client';
import { createRemoteJWKSet, decodeJwt, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { AppError, unauthorized } from '../errors/app-error.js';
import type { Logger } from '../logging/logger.js';
import { principalFromClaims, type Principal } from './principal.js';

export interface VerifierOptions {
  issuer: string;
  audience?: string;
  rolesClaim: string;
  clockToleranceSec: number;
  clientId?: string;
}

/**
 * Verifies bearer JWTs: signature against the issuer's JWKS, `iss`, `exp`
 * (required: a token without one would be valid forever), `nbf` and `iat` (not
 * in the future) with a small clock tolerance, and `aud` when configured. The JWKS comes from
 * OIDC discovery (lazily, so an identity provider that starts after us is fine),
 * or directly from the built-in development issuer.
 */
export class TokenVerifier {
  private keys: Promise<JWTVerifyGetKey> | undefined;
  /** The built-in development issuer's keys: a refusal then names the likely cause (a token minted for another server). */
  private readonly dev: boolean;

  constructor(
    private readonly opts: VerifierOptions,
    private readonly log: Logger,
    localKeys?: JWTVerifyGetKey,
  ) {
    if (localKeys) this.keys = Promise.resolve(localKeys);
    this.dev = localKeys !== undefined;
    const url = new URL(opts.issuer);
    if (url.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname) && !localKeys) {
      log.warn({ issuer: opts.issuer }, 'OIDC issuer uses plain http on a non-loopback host; tokens and keys travel unencrypted');
    }
  }

  get issuer(): string {
    return this.opts.issuer;
  }

  private discover(): Promise<JWTVerifyGetKey> {
    this.keys ??= (async () => {
      const config = await oidc.discovery(new URL(this.opts.issuer), this.opts.clientId ?? 'workflow-runtime', undefined, undefined, {
        execute: new URL(this.opts.issuer).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
      });
      const jwksUri = config.serverMetadata().jwks_uri;
      if (!jwksUri) throw new Error(`issuer ${this.opts.issuer} publishes no jwks_uri`);
      return createRemoteJWKSet(new URL(jwksUri));
    })().catch((err: unknown) => {
      this.keys = undefined; // try again on the next request
      throw err;
    });
    return this.keys;
  }

  /**
   * Verified tokens are remembered until they expire: a backend that polls with
   * the same token pays for the signature check once, not on every request.
   * Bounded; the oldest entries go first.
   */
  private readonly cache = new Map<string, Principal>();
  private static readonly CACHE_MAX = 10_000;

  async verify(token: string): Promise<Principal> {
    const hit = this.cache.get(token);
    if (hit) {
      if (hit.expires * 1000 + this.opts.clockToleranceSec * 1000 > Date.now()) return hit;
      this.cache.delete(token);
    }
    const principal = await this.verifyFresh(token);
    if (this.cache.size >= TokenVerifier.CACHE_MAX) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(token, principal);
    return principal;
  }

  private async verifyFresh(token: string): Promise<Principal> {
    let keys: JWTVerifyGetKey;
    try {
      keys = await this.discover();
    } catch (err) {
      this.log.error({ err, issuer: this.opts.issuer }, 'OIDC discovery failed');
      throw new AppError('AUTH_UNAVAILABLE', 'the identity provider cannot be reached; try again later');
    }
    try {
      const { payload } = await jwtVerify(token, keys, {
        issuer: this.opts.issuer,
        audience: this.opts.audience,
        clockTolerance: this.opts.clockToleranceSec,
        requiredClaims: ['exp'],
      });
      // jose checks iat only together with maxTokenAge; a token issued "later" is forged or from a broken clock
      if (typeof payload.iat === 'number' && payload.iat > Date.now() / 1000 + this.opts.clockToleranceSec) {
        throw unauthorized('token claim "iat" is in the future');
      }
      if (typeof payload.sub !== 'string' || payload.sub === '') throw unauthorized('token has no subject');
      return principalFromClaims(payload as Record<string, unknown>, this.opts.rolesClaim);
    } catch (err) {
      if (err instanceof AppError) throw err;
      if (err instanceof joseErrors.JWTExpired) throw unauthorized('token expired');
      if (err instanceof joseErrors.JWTClaimValidationFailed) {
        if (this.dev && err.claim === 'iss' && err.reason !== 'missing') throw unauthorized(this.otherIssuer(token));
        throw unauthorized(err.reason === 'missing' ? `token has no "${err.claim}" claim` : `token claim "${err.claim}" is invalid`);
      }
      if (err instanceof joseErrors.JWSSignatureVerificationFailed) throw unauthorized('token signature is invalid');
      if (err instanceof joseErrors.JWKSNoMatchingKey) {
        throw unauthorized(this.dev
          ? 'token is signed by a key this server\'s development issuer does not have: it was minted with another DATA_DIR '
            + '(another server\'s key); mint one with `npm run token`, which finds the running server\'s key'
          : 'token is signed by an unknown key');
      }
      if (err instanceof joseErrors.JWKSTimeout || err instanceof joseErrors.JWKSInvalid) {
        throw new AppError('AUTH_UNAVAILABLE', 'the identity provider keys cannot be fetched; try again later');
      }
      if (err instanceof joseErrors.JOSEError) throw unauthorized('token is malformed or uses an unsupported algorithm');
      throw err;
    }
  }

  /** A development token whose `iss` is another server's: most likely minted without this server's PORT or HOST. */
  private otherIssuer(token: string): string {
    let iss: unknown;
    try {
      iss = decodeJwt(token).iss;
    } catch {
      iss = undefined;
    }
    return `token claim "iss" is invalid: the token was issued by ${typeof iss === 'string' ? JSON.stringify(iss.slice(0, 200)) : 'another issuer'}, `
      + `this server's development issuer is ${this.opts.issuer} (a token minted for a server with another PORT or HOST); `
      + 'mint one with `npm run token`, which finds the running server\'s issuer';
  }
}
