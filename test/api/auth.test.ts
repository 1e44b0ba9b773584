import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { countRows } from '../helpers/databases.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';
import { DevIssuer } from '../../src/auth/dev-issuer.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

let rt: TestRuntime;
const base = '/v1/services/store/repo';

beforeAll(async () => {
  rt = await startTestRuntime();
});
afterAll(() => rt?.close());

const entryCount = () => countRows(rt.services.db, 'entries');

describe('401: invalid tokens', () => {
  it('no token, malformed header, garbage token', async () => {
    for (const headers of [{} as Record<string, string>, { authorization: 'Basic abc' }, { authorization: 'Bearer' }, { authorization: 'Bearer not.a.jwt' }]) {
      const res = await rt.client.request('GET', '/v1/services', { headers, token: undefined });
      expect(res.status, JSON.stringify(headers)).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_(token|request)"/);
      expect(res.body.code).toBe('UNAUTHORIZED');
    }
  });

  it('bad signature (another key, same issuer and kid)', async () => {
    const { privateKey } = await generateKeyPair('ES256');
    const kid = rt.services.devIssuer!.jwks().keys[0]!.kid!;
    const forged = await new SignJWT({ roles: ['admin'] }).setProtectedHeader({ alg: 'ES256', kid }).setSubject('mallory')
      .setIssuer(rt.services.devIssuer!.issuer).setIssuedAt().setExpirationTime('1h').sign(privateKey);
    const res = await rt.client.get('/v1/services', { token: forged });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/signature/);
  });

  it('a tampered payload', async () => {
    const token = await rt.token('bob', ['user']);
    const [h, , s] = token.split('.');
    const payload = Buffer.from(JSON.stringify({ sub: 'bob', roles: ['admin'], iss: rt.services.devIssuer!.issuer, exp: 9999999999 })).toString('base64url');
    expect((await rt.client.get('/v1/services', { token: `${h}.${payload}.${s}` })).status).toBe(401);
  });

  it('expired (beyond the clock tolerance)', async () => {
    const token = await rt.token('alice', ['admin'], { expiresIn: -120 });
    const res = await rt.client.get('/v1/services', { token });
    expect(res.status).toBe(401);
    expect(res.body.message).toMatch(/expired/);
  });

  it('wrong issuer (a token from another development issuer)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'wcr-other-'));
    try {
      const other = await DevIssuer.open(dir, 'http://127.0.0.1:1/elsewhere');
      const token = await other.mint({ user: 'alice', roles: ['admin'] });
      expect((await rt.client.get('/v1/services', { token })).status).toBe(401);
      // the right key (same DATA_DIR) but another iss claim: refused for the claim
      const sameKey = await DevIssuer.open(rt.dataDir, 'http://127.0.0.1:1/not-us');
      const wrongIss = await sameKey.mint({ user: 'alice', roles: ['admin'] });
      const res = await rt.client.get('/v1/services', { token: wrongIss });
      expect(res.status).toBe(401);
      expect(res.body.message).toMatch(/"iss"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('unsigned (alg none) tokens', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const payload = Buffer.from(JSON.stringify({ sub: 'x', iss: rt.services.devIssuer!.issuer, exp: 9999999999, roles: ['admin'] })).toString('base64url');
    expect((await rt.client.get('/v1/services', { token: `${header}.${payload}.` })).status).toBe(401);
  });

  it('GET /v1/auth needs no token and names the issuer', async () => {
    const res = await rt.client.get('/v1/auth', { token: undefined });
    expect(res.status).toBe(200);
    expect(res.body.url).toBe(rt.services.devIssuer!.issuer);
    const disc = await fetch(`${res.body.url}/.well-known/openid-configuration`).then((r) => r.json()) as { jwks_uri: string };
    const jwks = await fetch(disc.jwks_uri).then((r) => r.json()) as { keys: unknown[] };
    expect(jwks.keys).toHaveLength(1);
  });
});

describe('403: rights', () => {
  it('a token without a known role', async () => {
    const res = await rt.client.get('/v1/services', { token: await rt.token('nobody', ['guest']) });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('NO_ROLE');
  });

  it('missing permission: readonly cannot create, write or delete; changes nothing', async () => {
    const ro = await rt.token('reader', ['readonly']);
    const before = await entryCount();
    const res = await rt.client.post(base, { name: 'nope.txt', type: 'document' }, { token: ro });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
    expect(await entryCount()).toBe(before);
    const cmd = await rt.client.post(`${base}/command`, { command: 'import', parameters: { url: 'http://127.0.0.1:1/x' } }, { token: ro });
    expect(cmd.status).toBe(403);
  });

  it("another user's entry: 403 for a user, visible to an operator, hidden from the user's listings", async () => {
    const alice = rt.client.withToken(await rt.token('alice', ['user']));
    const bob = rt.client.withToken(await rt.token('bob', ['user']));
    const op = rt.client.withToken(await rt.token('olga', ['operator']));
    const mine = await alice.post(base, { name: 'alice-private.txt', type: 'document' });
    expect(mine.status).toBe(200);
    const uuid = mine.body.uuid as string;
    for (const [method, path, json] of [
      ['GET', `${base}/${uuid}`, undefined], ['PATCH', `${base}/${uuid}`, { metadata: { x: 1 } }],
      ['DELETE', `${base}/${uuid}`, undefined], ['GET', `${base}/${uuid}/content`, undefined],
    ] as const) {
      const res = await bob.request(method, path, { json });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('NOT_OWNER');
    }
    expect((await alice.get(`${base}/${uuid}`)).status).toBe(200);
    expect((await op.get(`${base}/${uuid}`)).status).toBe(200);
    const bobsView = await bob.get(`${base}?scope=root&limit=500`);
    expect(bobsView.body.embedded.entries.map((e: { uuid: string }) => e.uuid)).not.toContain(uuid);
    const alicesView = await alice.get(`${base}?scope=root&limit=500`);
    expect(alicesView.body.embedded.entries.map((e: { uuid: string }) => e.uuid)).toContain(uuid);
  });

  it('x-owner: yourself is fine, someone else needs impersonate', async () => {
    const carol = rt.client.withToken(await rt.token('carol', ['user'], { email: 'carol@example.com' }));
    const self = await carol.post(base, { name: 'carol-1.txt', type: 'document' }, { headers: { 'x-owner': 'carol@example.com' } });
    expect(self.status).toBe(200);
    expect(self.body).toMatchObject({ creator: 'carol', owner: 'carol@example.com' });
    const before = await entryCount();
    const other = await carol.post(base, { name: 'carol-2.txt', type: 'document' }, { headers: { 'x-owner': 'dave' } });
    expect(other.status).toBe(403);
    expect(other.body.code).toBe('IMPERSONATION_DENIED');
    expect(await entryCount()).toBe(before);
    const admin = rt.client.withToken(await rt.token('root', ['admin']));
    const forDave = await admin.post(base, { name: 'for-dave.txt', type: 'document' }, { headers: { 'x-owner': 'dave' } });
    expect(forDave.status).toBe(200);
    expect(forDave.body).toMatchObject({ creator: 'root', owner: 'dave' });
    // dave owns it now: he can read it although root created it
    const dave = rt.client.withToken(await rt.token('dave', ['user']));
    expect((await dave.get(`${base}/${forDave.body.uuid}`)).status).toBe(200);
  });
});

describe('an external OIDC issuer (discovery + JWKS over HTTP)', () => {
  it('verifies tokens of the configured issuer and refuses the development issuer', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const idp = http.createServer((req, res) => {
      const origin = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
      res.setHeader('content-type', 'application/json');
      if (req.url === '/realms/test/.well-known/openid-configuration') {
        res.end(JSON.stringify({ issuer: `${origin}/realms/test`, jwks_uri: `${origin}/realms/test/certs`, authorization_endpoint: `${origin}/auth`, token_endpoint: `${origin}/token`, response_types_supported: ['code'], subject_types_supported: ['public'], id_token_signing_alg_values_supported: ['RS256'] }));
      } else if (req.url === '/realms/test/certs') {
        res.end(JSON.stringify({ keys: [jwk] }));
      } else {
        res.statusCode = 404;
        res.end('{}');
      }
    });
    await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}/realms/test`;
    const ext = await startTestRuntime({ overrides: { auth: { issuer, audience: 'workflow', rolesClaim: 'realm_access.roles' } } });
    try {
      expect(ext.services.devIssuer).toBeUndefined();
      const sign = (claims: Record<string, unknown>, aud = 'workflow') => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setSubject('kc-user').setIssuer(issuer).setAudience(aud).setIssuedAt().setExpirationTime('5m').sign(privateKey);
      const ok = await ext.client.get('/v1/services', { token: await sign({ realm_access: { roles: ['operator'] }, preferred_username: 'kc' }) });
      expect(ok.status).toBe(200);
      const wrongAud = await ext.client.get('/v1/services', { token: await sign({ realm_access: { roles: ['operator'] } }, 'other') });
      expect(wrongAud.status).toBe(401);
      const noRoles = await ext.client.get('/v1/services', { token: await sign({ roles: ['admin'] }) });
      expect(noRoles.status).toBe(403);
      const dev = await rt.token('alice', ['admin']);
      expect((await ext.client.get('/v1/services', { token: dev })).status).toBe(401);
      expect((await ext.client.get('/v1/auth', { token: undefined })).body.url).toBe(issuer);
      // the development issuer is off
      const jwks = await fetch(`${ext.url}/dev-issuer/jwks`);
      expect(jwks.status).toBe(404);
      await jwks.arrayBuffer();
    } finally {
      await ext.close();
      idp.close();
    }
  });

  it('503 when the identity provider cannot be reached', async () => {
    const ext = await startTestRuntime({ overrides: { auth: { issuer: 'http://127.0.0.1:9/realms/none' } } });
    try {
      const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('x').sign(new TextEncoder().encode('k'.repeat(32)));
      const res = await ext.client.get('/v1/services', { token });
      expect(res.status).toBe(503);
      expect(res.body.code).toBe('AUTH_UNAVAILABLE');
    } finally {
      await ext.close();
    }
  });
});
