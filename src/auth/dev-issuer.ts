import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, importJWK, SignJWT, createLocalJWKSet, type JWK, type JWTVerifyGetKey, type CryptoKey } from 'jose';

const ALG = 'ES256';

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
    const file = path.join(dataDir, 'dev-issuer', 'key.json');
    let stored: { privateJwk: JWK; publicJwk: JWK } | undefined;
    try {
      stored = JSON.parse(await readFile(file, 'utf8')) as { privateJwk: JWK; publicJwk: JWK };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`cannot read the development issuer key ${file}: ${(err as Error).message}`);
    }
    if (!stored) {
      const { privateKey, publicKey } = await generateKeyPair(ALG, { extractable: true });
      const kid = randomUUID();
      stored = {
        privateJwk: { ...(await exportJWK(privateKey)), kid, alg: ALG },
        publicJwk: { ...(await exportJWK(publicKey)), kid, alg: ALG, use: 'sig' },
      };
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      // 'wx': when two processes race, the second fails and re-reads the winner's key
      await writeFile(file, JSON.stringify(stored), { mode: 0o600, flag: 'wx' }).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EEXIST') throw err;
        stored = JSON.parse(await readFile(file, 'utf8')) as { privateJwk: JWK; publicJwk: JWK };
      });
    }
    const privateKey = (await importJWK(stored.privateJwk, ALG)) as CryptoKey;
    return new DevIssuer(privateKey, stored.publicJwk, issuer);
  }

  jwks(): { keys: JWK[] } {
    return { keys: [this.publicJwk] };
  }

  keySet(): JWTVerifyGetKey {
    return createLocalJWKSet(this.jwks());
  }

  discovery(): Record<string, unknown> {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/jwks`,
      authorization_endpoint: `${this.issuer}/authorize`,
      token_endpoint: `${this.issuer}/token`,
      response_types_supported: ['code'],
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
