import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, importJWK, type JWK } from 'jose';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import type { TestClient } from '../helpers/client.js';

/** Token claims, nosniff on every response, HEAD like GET, and the development issuer's discovery. */
let rt: TestRuntime;
let api: TestClient;
let sign: (claims: Record<string, unknown>) => Promise<string>;

beforeAll(async () => {
  rt = await startTestRuntime();
  api = rt.client.withToken(await rt.token('alice', ['admin']));
  // tokens with chosen claims, signed by the development issuer's own key
  const stored = JSON.parse(await readFile(path.join(rt.dataDir, 'dev-issuer', 'key.json'), 'utf8')) as { privateJwk: JWK };
  const key = await importJWK(stored.privateJwk, 'ES256');
  sign = (claims) => new SignJWT({ roles: ['admin'], ...claims })
    .setProtectedHeader({ alg: 'ES256', kid: stored.privateJwk.kid!, typ: 'JWT' })
    .setSubject('alice').setIssuer(rt.services.devIssuer!.issuer).sign(key);
});
afterAll(() => rt?.close());

const now = () => Math.floor(Date.now() / 1000);

describe('token time claims', () => {
  it('a token without exp is refused, whatever else it has', async () => {
    for (const claims of [{}, { iat: now() }, { iat: now(), nbf: now() - 10 }]) {
      const res = await rt.client.get('/v1/services', { token: await sign(claims) });
      expect(res.status, JSON.stringify(claims)).toBe(401);
      expect(res.body.message).toMatch(/"exp"/);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
    }
  });

  it('iat in the future beyond the clock tolerance is refused; within it, accepted', async () => {
    const tolerance = rt.config.auth.clockToleranceSec;
    const future = await sign({ iat: now() + tolerance + 120, exp: now() + 3600 });
    const res = await rt.client.get('/v1/services', { token: future });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/"iat"/);
    // a skewed clock within the tolerance is fine
    expect((await rt.client.get('/v1/services', { token: await sign({ iat: now() + Math.floor(tolerance / 2), exp: now() + 3600 }) })).status).toBe(200);
    // iat is optional; exp alone is enough
    expect((await rt.client.get('/v1/services', { token: await sign({ exp: now() + 3600 }) })).status).toBe(200);
  });

  it('a non-numeric exp or iat is refused', async () => {
    for (const claims of [{ exp: 'tomorrow' }, { exp: now() + 3600, iat: 'now' }]) {
      expect((await rt.client.get('/v1/services', { token: await sign(claims) })).status, JSON.stringify(claims)).toBe(401);
    }
  });

  it('a refused token is not remembered as valid (same token twice)', async () => {
    const token = await sign({ iat: now() });
    expect((await rt.client.get('/v1/services', { token })).status).toBe(401);
    expect((await rt.client.get('/v1/services', { token })).status).toBe(401);
  });
});

describe('X-Content-Type-Options: nosniff', () => {
  it('on content, previews, JSON, errors, unmatched routes and open routes', async () => {
    const doc = (await api.post('/v1/services/store/repo', { name: 'page.html', type: 'document' })).body.uuid as string;
    await api.request('PUT', `/v1/services/store/repo/${doc}/content`, { body: '<script>alert(1)</script>', headers: { 'content-type': 'text/html' } });
    const responses = [
      await api.get(`/v1/services/store/repo/${doc}/content`),
      await api.get(`/v1/services/store/repo/${doc}/content`, { headers: { range: 'bytes=0-3' } }),
      await api.get(`/v1/services/store/repo/${doc}/preview`), // 404 PREVIEW_* until rendered: still an answer
      await api.get(`/v1/services/store/repo/${doc}`),
      await rt.client.get('/v1/services', { token: undefined }),
      await api.get('/v1/nowhere'),
      await rt.client.get('/v1/auth'),
      await rt.client.get('/healthz'),
      await rt.client.get('/dev-issuer/jwks'),
    ];
    for (const res of responses) expect(res.headers.get('x-content-type-options'), String(res.status)).toBe('nosniff');
    expect(responses[0]!.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('HEAD answers like GET without a body', () => {
  it('JSON routes: same status, type and length as GET', async () => {
    const doc = (await api.post('/v1/services/store/repo', { name: 'head.txt', type: 'document' })).body.uuid as string;
    for (const p of ['/v1/services', '/v1/services/store/repo', `/v1/services/store/repo/${doc}`, '/v1/auth']) {
      const get = await api.get(p);
      const head = await api.request('HEAD', p);
      expect(head.status, p).toBe(get.status);
      expect(head.raw.length, p).toBe(0);
      expect(head.headers.get('content-type'), p).toBe(get.headers.get('content-type'));
      expect(head.headers.get('content-length'), p).toBe(String(get.raw.length));
    }
  });

  it('errors keep their status and headers: 401 with WWW-Authenticate, 404', async () => {
    const unauth = await rt.client.request('HEAD', '/v1/services', { token: undefined });
    expect(unauth.status).toBe(401);
    expect(unauth.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(unauth.raw.length).toBe(0);
    const missing = await api.request('HEAD', '/v1/services/store/repo/00000000-0000-4000-8000-000000000000');
    expect(missing.status).toBe(404);
    expect(missing.raw.length).toBe(0);
  });

  it('HEAD on a route without GET is 405 with Allow', async () => {
    const res = await api.request('HEAD', '/v1/repo/inactives');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toMatch(/POST/);
  });
});

describe('development issuer discovery', () => {
  it('lists only endpoints this server serves, and each answers', async () => {
    const res = await rt.client.get('/dev-issuer/.well-known/openid-configuration');
    expect(res.status).toBe(200);
    const doc = res.body as Record<string, unknown>;
    expect(doc.issuer).toBe(rt.services.devIssuer!.issuer);
    expect(doc).not.toHaveProperty('authorization_endpoint');
    expect(doc).not.toHaveProperty('token_endpoint');
    expect(doc).not.toHaveProperty('response_types_supported');
    const urls = Object.entries(doc).filter(([k, v]) => k !== 'issuer' && typeof v === 'string' && /^https?:/.test(v));
    expect(urls.map(([k]) => k)).toEqual(['jwks_uri']);
    for (const [, url] of urls) {
      const r = await fetch(url as string);
      expect(r.status, String(url)).toBe(200);
      expect(((await r.json()) as { keys: unknown[] }).keys).toHaveLength(1);
    }
    // the issuer's own discovery path is the one served
    expect((await fetch(`${doc.issuer as string}/.well-known/openid-configuration`)).status).toBe(200);
  });
});
