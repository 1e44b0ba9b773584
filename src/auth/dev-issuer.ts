import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { importJWK, SignJWT, createLocalJWKSet, type JWK, type JWTVerifyGetKey, type CryptoKey } from 'jose';
import { ALG, loadOrCreateKey, readExistingKey, type StoredKey } from './dev-issuer-key.js';

export interface MintOptions {
  user: string;
  roles: string[];
  /** Lifetime in seconds (default one hour). Negative values mint expired tokens (tests). */
  expiresIn?: number;
  email?: string;
  audience?: string;
  /** Extra claims (tests: other issuers, sessions). */
  claims?: Record<string, unknown>;
}

/**
 * The built-in development issuer, used when no OIDC_ISSUER is configured: an
 * ES256 key kept in DATA_DIR, a discovery document and JWKS served by this
 * server, and a CLI that mints tokens. Never active when OIDC_ISSUER is set.
 */
export class DevIssuer {
  private constructor(
    private readonly privateKey: CryptoKey,
    private readonly publicJwk: JWK,
    public issuer: string,
  ) {}

  /** Loads the key from `<dataDir>/dev-issuer/key.json`, creating it on first use. */
  static async open(dataDir: string, issuer: string): Promise<DevIssuer> {
    return DevIssuer.fromKey(await loadOrCreateKey(path.join(dataDir, 'dev-issuer', 'key.json')), issuer);
  }

  /** The issuer of a key a server already made; undefined when `<dataDir>/dev-issuer` holds none (nothing is created). */
  static async openExisting(dataDir: string, issuer: string): Promise<DevIssuer | undefined> {
    const stored = await readExistingKey(path.join(dataDir, 'dev-issuer', 'key.json'));
    return stored && DevIssuer.fromKey(stored, issuer);
  }

  private static async fromKey(stored: StoredKey, issuer: string): Promise<DevIssuer> {
    const privateKey = (await importJWK(stored.privateJwk, ALG)) as CryptoKey;
    return new DevIssuer(privateKey, stored.publicJwk, issuer);
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  keySet(): JWTVerifyGetKey {
    return createLocalJWKSet(this.jwks());
  }

  /**
   * The discovery document lists only what this server serves: the issuer and
   * its JWKS. There is no authorization or token endpoint (tokens come from
   * `npm run token`, `dev-token.ts`), so none is advertised.
   */
  discovery(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/jwks`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: [ALG],
    };
  }

  async mint(opts: MintOptions): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({
      preferred_username: opts.user,
      roles: opts.roles,
      sid: randomUUID(),
      ...(opts.email ? { email: opts.email } : {}),
      ...opts.claims,
    })
      .setProtectedHeader({ alg: ALG, kid: this.publicJwk.kid!, typ: 'JWT' })
      .setSubject(opts.user)
      .setIssuer(this.issuer)
      .setIssuedAt(now)
      .setJti(randomUUID())
      .setExpirationTime(now + (opts.expiresIn ?? 3600));
    if (opts.audience) jwt.setAudience(opts.audience);
    return jwt.sign(this.privateKey);
  }
}
