import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../src/api/app.js';
import { LongLivedResponses } from '../../src/api/long-lived.js';
import { AREAS } from '../../src/areas/index.js';
import type { Action, Area } from '../../src/config/schema.js';
import type { ApiResponse, TestClient } from '../helpers/client.js';
import { tempDir } from '../helpers/fs.js';
import { startTestRuntime, TEST_SERVICES, type TestRuntime } from '../helpers/runtime.js';
import { type Fixtures, type Row, ROWS } from './authorization-rows.js';

/**
 * The authorization matrix (issue 23): every route of both APIs, taken from
 * the routers of the built app, against no token, an expired token, a token
 * of another issuer, each default role, and another user's objects. Each
 * answer is DESIGN.md section 5's: 401 for a token that is not valid, 403
 * when the role lacks the right (from `auth.roles` of config/default.yaml),
 * never 401 or 403 when it has it; another user's object answers 403 or 404
 * and no body shows its data. Responses are checked against the OpenAPI
 * documents. The rows are in authorization-rows.ts, keyed by method and path.
 */

let rt: TestRuntime;
let routes: string[];
const ROLES = ['readonly', 'user', 'operator', 'admin'] as const;

/** Every `METHOD /path` of the authenticated routers (`/v1`, `/v3`) of the app as built (HEAD goes with GET). */
function routesOfApp(): string[] {
  const app = createApp(rt.services, { shuttingDown: false, longLived: new LongLivedResponses() }, AREAS);
  const out = new Set<string>();
  for (const mw of app.middleware as unknown as { router?: { opts: { prefix?: string }; stack: { path: string; methods: string[] }[] } }[]) {
    const prefix = mw.router?.opts.prefix;
    if (!mw.router || (prefix !== '/v1' && prefix !== '/v3')) continue;
    for (const layer of mw.router.stack) {
      for (const m of layer.methods) if (m !== 'HEAD') out.add(`${m} ${layer.path}`);
    }
  }
  out.delete('GET /v1/auth'); // open: the identity-provider information needs no token
  return [...out].sort();
}

const granted = (role: string, area: Area, action: Action): boolean => {
  const grant = rt.config.auth.roles[role]?.areas[area];
  return !!grant && grant.actions.includes(action);
};

const send = (c: TestClient, method: string, row: Row, f: Fixtures): Promise<ApiResponse> => {
  const r = row.req(f);
  return row.stream ? head(c, method, r.path) : c.request(method, r.path, { json: r.json, body: r.body, headers: r.headers });
};

/** An endless answer: its status, headers and what came with them; an error answer (not a stream) is read whole. */
async function head(c: TestClient, method: string, path: string): Promise<ApiResponse> {
  const ac = new AbortController();
  const res = await fetch(`${c.baseUrl}${path}`, { method, headers: c.token ? { authorization: `Bearer ${c.token}` } : {}, signal: ac.signal });
  const contentType = res.headers.get('content-type') ?? '';
  if (!contentType.startsWith('text/event-stream')) {
    const raw = Buffer.from(await res.arrayBuffer());
    return { status: res.status, headers: res.headers, contentType, body: contentType.includes('json') && raw.length ? JSON.parse(raw.toString('utf8')) : raw, raw };
  }
  const first = await res.body!.getReader().read();
  ac.abort();
  const raw = Buffer.from(first.value ?? new Uint8Array());
  return { status: res.status, headers: res.headers, contentType, body: raw.toString('utf8'), raw };
}

/** Objects for one pass, owned by `ann` (shared ones made by an admin); names carry the pass's marker. */
async function fixtures(owner: TestClient, admin: TestClient): Promise<Fixtures> {
  const marker = `secret${randomUUID().slice(0, 8)}`;
  const ok = (res: ApiResponse) => {
    expect.soft(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const docBody = ok(await owner.post('/v1/services/store/repo', { name: `doc-${marker}`, type: 'document', metadata: { m: marker } }));
  await owner.request('PUT', `/v1/services/store/repo/${docBody.uuid}/content`, { body: `bytes-${marker}`, headers: { 'content-type': 'text/plain' } });
  const coll = ok(await owner.post('/v1/services/store/repo', { name: `coll-${marker}`, type: 'collection' }));
  const cmd = ok(await owner.post('/v1/services/store/repo/command', { command: 'copy', parameters: { source: docBody.uuid, target: coll.uuid } }));
  const task = ok(await owner.post('/v1/services/work/tasks', {
    name: `task-${marker}`, lists: { input: { embedded: { listItems: [{ href: `/v1/services/store/repo/${docBody.uuid}`, metadata: { m: marker } }] } } },
  }));
  const input = ok(await owner.get(`/v1/services/work/tasks/${task.tid}/input?embed=items`));
  const list = ok(await owner.post('/v1/lists', { name: `list-${marker}`, embedded: { listItems: [{ href: 'https://example.com/a.pdf', metadata: { m: marker } }] } }));
  const items = ok(await owner.get(`/v1/lists/${list.lid}/items`));
  const panel = ok(await owner.post('/v1/panels', { name: `panel-${marker}` }));
  const message = ok(await owner.post('/v1/messages', { text: `message-${marker}` }));
  const printerDir = await tempDir('wcr-matrix-printer-');
  const printer = `matrix-${randomUUID().slice(0, 8)}`;
  ok(await admin.post('/v3/printers/', { name: printer, connection: `file://${printerDir}` }));
  const flow = `flow-${randomUUID().slice(0, 8)}`;
  ok(await admin.post('/v3/flows/', { name: flow, steps: [{ use: 'rotate', with: { degrees: 90 } }] }));
  const configPath = `matrix/${randomUUID().slice(0, 8)}`;
  ok(await admin.put(`/v1/config?path=${configPath}`, { v: 1 }));
  const submitted = await owner.request('POST', `/v3/jobs/?printer=${encodeURIComponent(printer)}&name=job-${marker}`, { body: '%PDF-1.4 m', headers: { 'content-type': 'application/pdf' } });
  expect.soft(submitted.status, JSON.stringify(submitted.body)).toBe(201);
  return {
    marker, doc: docBody.uuid, collection: coll.uuid, cid: cmd.cid, tid: task.tid, inputItem: input.embedded.listItems[0].id,
    lid: list.lid, listItem: items[0].id, pid: panel.pid, message: message.uuid, printer, printerDir, flow, configPath, job: String(submitted.body.id),
  };
}

beforeAll(async () => {
  rt = await startTestRuntime({
    parts: { api: true, workers: false },
    overrides: { services: { ...TEST_SERVICES, work: { type: 'mock', options: { tasks: { itemMs: 10 }, functions: true } } } },
  });
  routes = routesOfApp();
});
afterAll(() => rt.close());

async function each(label: string, c: TestClient, f: Fixtures, check: (key: string, row: Row, res: ApiResponse) => void): Promise<void> {
  for (const key of routes) {
    const row = ROWS.get(key);
    if (!row) continue; // reported by the completeness test
    const res = await send(c, key.slice(0, key.indexOf(' ')), row, f);
    expect.soft(res.status, `${label} ${key}: ${JSON.stringify(res.body)?.slice(0, 300)}`).toBeLessThan(500);
    check(key, row, res);
  }
}

// each test sends one request per route (about 120) after making its fixtures: a volume, not a latency, to wait for
describe('the authorization matrix', { timeout: 120_000 }, () => {
  it('has a row for every route of both APIs, and no row for a route that is gone', () => {
    expect.soft(routes.length).toBeGreaterThan(100);
    expect.soft(routes.filter((r) => !ROWS.has(r)), 'routes without a row in authorization-rows.ts').toEqual([]);
    expect.soft([...ROWS.keys()].filter((k) => !routes.includes(k)), 'rows whose route is gone').toEqual([]);
  });

  // the bad tokens: none, expired, another issuer's, and one in our issuer's name signed with another key
  const badTokens: Record<string, () => Promise<string | undefined>> = {
    'no token': async () => undefined,
    'an expired token': () => rt.token('ann', ['admin'], { expiresIn: -3600 }),
    'a token of another issuer': async () => new SignJWT({ preferred_username: 'ann', roles: ['admin'] })
      .setProtectedHeader({ alg: 'ES256', kid: 'other' }).setSubject('ann').setIssuer('https://issuer.example/other')
      .setIssuedAt().setExpirationTime('1h').sign((await generateKeyPair('ES256')).privateKey),
    'a forged token (our issuer, another key)': async () => new SignJWT({ preferred_username: 'ann', roles: ['admin'] })
      .setProtectedHeader({ alg: 'ES256', kid: 'other' }).setSubject('ann').setIssuer(rt.services.devIssuer!.issuer)
      .setIssuedAt().setExpirationTime('1h').sign((await generateKeyPair('ES256')).privateKey),
  };
  for (const [label, mint] of Object.entries(badTokens)) {
    it(`401 for ${label}, on every route`, async () => {
      const admin = rt.client.withToken(await rt.token('root', ['admin']));
      const f = await fixtures(rt.client.withToken(await rt.token('ann', ['user'])), admin);
      await each(label, rt.client.withToken(await mint()), f, (key, _row, res) => {
        expect.soft(res.status, `${label} ${key}`).toBe(401);
        expect.soft(res.headers.get('www-authenticate'), `${label} ${key}`).toMatch(/^Bearer/);
        expect.soft(JSON.stringify(res.body)).not.toContain(f.marker);
      });
    });
  }

  it('another user\'s objects: 403 or 404, never their data; listings show none of it', async () => {
    const admin = rt.client.withToken(await rt.token('root', ['admin']));
    const f = await fixtures(rt.client.withToken(await rt.token('ann', ['user'])), admin);
    const bob = rt.client.withToken(await rt.token('bob', ['user']));
    await each('bob', bob, f, (key, row, res) => {
      const label = `bob ${key}: ${JSON.stringify(res.body)?.slice(0, 200)}`;
      const needsOk = row.needs.every(([area, action]) => granted('user', area, action));
      if (row.always) expect.soft(res.status, label).toBe(row.always);
      else if (!needsOk) expect.soft(res.status, label).toBe(403);
      else if (row.owned) expect.soft([403, 404], label).toContain(res.status);
      else expect.soft([401, 403], label).not.toContain(res.status);
      expect.soft(res.raw.toString('utf8'), label).not.toContain(f.marker);
    });
  });

  for (const role of ROLES) {
    it(`role ${role}: 403 exactly where the role lacks the right`, async () => {
      const admin = rt.client.withToken(await rt.token('root', ['admin']));
      // the caller is the objects' owner, so only the role decides
      const f = await fixtures(rt.client.withToken(await rt.token('ann', ['user'])), admin);
      const caller = rt.client.withToken(await rt.token('ann', [role]));
      await each(role, caller, f, (key, row, res) => {
        const label = `${role} ${key}: ${JSON.stringify(res.body)?.slice(0, 200)}`;
        const needsOk = row.needs.every(([area, action]) => granted(role, area, action));
        if (row.always) expect.soft(res.status, label).toBe(row.always);
        else if (needsOk) expect.soft([401, 403], label).not.toContain(res.status);
        else expect.soft(res.status, label).toBe(403);
      });
    });
  }
});
