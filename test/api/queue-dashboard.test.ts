import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_DASHBOARD_COOKIE } from '../../src/api/admin/queue-dashboard.js';
import { QUEUE_NAMES } from '../../src/queue/jobs.js';
import { startTestRuntime, type TestRuntime } from '../helpers/runtime.js';

/**
 * The queue dashboard (bull-board at /admin/queues, issue 24 item 8) against
 * real Redis queues: 401 without a token, 403 for roles other than admin,
 * the admin's bearer header or sign-in cookie, read-only by default (every
 * change refused), changes allowed only when configured, off when disabled.
 */
let rt: TestRuntime;
let writable: TestRuntime;
let off: TestRuntime;
let admin: string;

beforeAll(async () => {
  [rt, writable, off] = await Promise.all([
    startTestRuntime(),
    startTestRuntime({ overrides: { admin: { queueDashboard: { readOnly: false } } } }),
    startTestRuntime({ overrides: { admin: { queueDashboard: { enabled: false } } } }),
  ]);
  admin = await rt.token('root', ['admin']);
}, 120_000);
afterAll(async () => {
  await Promise.all([rt?.close(), writable?.close(), off?.close()]);
});

const get = (r: TestRuntime, path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${r.client.baseUrl}${path}`, { method, headers, redirect: 'manual' });
const bearer = (t: string) => ({ authorization: `Bearer ${t}` });

describe('queue dashboard', () => {
  it('401 without a token (the error body names how to sign in), 403 for every other role, 401 for a bad token', async () => {
    for (const path of ['/admin/queues', '/admin/queues/api/queues']) {
      const none = await get(rt, path);
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
      const body = await none.json() as { code: string; message: string };
      expect(body).toMatchObject({ status: 401, code: 'UNAUTHORIZED' });
      expect(body.message).toContain('/admin/queues/login');
      for (const role of ['operator', 'user', 'readonly']) {
        const res = await get(rt, path, bearer(await rt.token('someone', [role])));
        expect(res.status, role).toBe(403);
        expect(await res.json()).toMatchObject({ code: 'FORBIDDEN' });
      }
      expect((await get(rt, path, bearer('not.a.token'))).status).toBe(401);
      const expired = await get(rt, path, bearer(await rt.token('root', ['admin'], { expiresIn: -120 })));
      expect(expired.status).toBe(401);
    }
  });

  it('shows every queue of the deployment to an admin, read-only', async () => {
    const page = await get(rt, '/admin/queues', bearer(admin));
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain('wcr queues');
    const api = await get(rt, '/admin/queues/api/queues', bearer(admin));
    expect(api.status).toBe(200);
    const { queues } = await api.json() as { queues: { name: string; readOnlyMode: boolean }[] };
    expect(queues.map((q) => q.name).sort()).toEqual([...QUEUE_NAMES].sort());
    expect(queues.every((q) => q.readOnlyMode)).toBe(true);
    // a change is refused before bull-board sees it
    for (const [method, path] of [['PUT', `/admin/queues/api/queues/${QUEUE_NAMES[0]}/retry/failed`], ['PUT', `/admin/queues/api/queues/${QUEUE_NAMES[0]}/clean/completed`], ['PUT', `/admin/queues/api/queues/${QUEUE_NAMES[0]}/pause`]] as const) {
      const res = await get(rt, path, bearer(admin), method);
      expect(res.status, path).toBe(403);
      expect((await res.json() as { message: string }).message).toContain('admin.queueDashboard.readOnly');
    }
  });

  it('a browser signs in with a cookie for this path only; an operator gets none; signing out ends it', async () => {
    const login = await get(rt, '/admin/queues/login');
    expect(login.status).toBe(200);
    expect(await login.text()).toContain('npx wcr token --roles admin');

    const refused = await get(rt, '/admin/queues/session', bearer(await rt.token('op', ['operator'])), 'POST');
    expect(refused.status).toBe(403);
    expect(refused.headers.get('set-cookie')).toBeNull();
    expect((await get(rt, '/admin/queues/session', {}, 'POST')).status).toBe(401);

    const session = await get(rt, '/admin/queues/session', bearer(admin), 'POST');
    expect(session.status).toBe(204);
    const cookie = session.headers.get('set-cookie')!;
    expect(cookie).toMatch(new RegExp(`^${QUEUE_DASHBOARD_COOKIE}=`));
    expect(cookie).toMatch(/path=\/admin\/queues/i);
    expect(cookie).toMatch(/httponly/i);
    expect(cookie).toMatch(/samesite=strict/i);
    const pair = cookie.split(';')[0]!;
    const api = await get(rt, '/admin/queues/api/queues', { cookie: pair });
    expect(api.status).toBe(200);
    // the cookie is a credential for the dashboard only: the APIs still want the bearer header
    expect((await get(rt, '/v1/services', { cookie: pair })).status).toBe(401);

    const out = await get(rt, '/admin/queues/session', { cookie: pair }, 'DELETE');
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toMatch(new RegExp(`^${QUEUE_DASHBOARD_COOKIE}=;`));
  });

  it('with readOnly false an admin may change a queue; with enabled false there is no dashboard', async () => {
    const token = await writable.token('root', ['admin']);
    const { queues } = await (await get(writable, '/admin/queues/api/queues', bearer(token))).json() as { queues: { readOnlyMode: boolean }[] };
    expect(queues.every((q) => !q.readOnlyMode)).toBe(true);
    const retry = await get(writable, `/admin/queues/api/queues/${QUEUE_NAMES[0]}/retry/failed`, bearer(token), 'PUT');
    expect(retry.status).toBe(200);

    const none = await get(off, '/admin/queues', bearer(await off.token('root', ['admin'])));
    expect(none.status).toBe(404);
    expect(await none.json()).toMatchObject({ code: 'NOT_FOUND' });
  });
});
