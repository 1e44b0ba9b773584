import { createBullBoard } from '@bull-board/api';
import { KoaAdapter } from '@bull-board/koa';
import type { Context, Middleware } from 'koa';
import { AppError, unauthorized } from '../../errors/app-error.js';
import type { Principal } from '../../auth/principal.js';
import type { Services } from '../../runtime/services.js';

/** Where the dashboard lives, and the cookie a browser signs in with (sent to nothing else). */
export const QUEUE_DASHBOARD_PATH = '/admin/queues';
export const QUEUE_DASHBOARD_COOKIE = 'wcr_queue_dashboard';
/** The role the dashboard is for. */
const ADMIN_ROLE = 'admin';

/**
 * bull-board at `/admin/queues` (issue 24, item 8): every BullMQ queue of
 * this deployment, for the admin role only, read-only unless
 * `admin.queueDashboard.readOnly` is false.
 *
 * A browser cannot put a bearer token on a page it opens, so an admin signs
 * in once: `POST /admin/queues/session` with `Authorization: Bearer <admin
 * token>` (the page `/admin/queues/login` does it from a pasted token) sets
 * a cookie holding that token: HttpOnly, SameSite=Strict, Path=/admin/queues,
 * living no longer than the token nor `cookieMaxAgeSec`. Every request
 * under the path is then checked like an API request, from the bearer header
 * or that cookie: 401 without a valid token, 403 without the admin role; in
 * read-only mode anything but GET and HEAD is 403 (the page hides the
 * buttons too). `DELETE /admin/queues/session` signs out.
 */
export function queueDashboard(s: Services): Middleware | undefined {
  const cfg = s.config.admin.queueDashboard;
  if (!cfg.enabled) return undefined;
  const server = new KoaAdapter().setBasePath(QUEUE_DASHBOARD_PATH);
  const { setQueues } = createBullBoard({
    queues: [],
    serverAdapter: server,
    options: { uiConfig: { boardTitle: 'wcr queues' } },
  });
  // the queues only once the Redis prefix is known to be this deployment's: a
  // BullMQ queue writes its meta key as soon as it is made (queue.bound())
  s.queue.bound().then(() => setQueues(s.queue.boardAdapters({ readOnly: cfg.readOnly })), () => undefined);
  const board = server.registerPlugin();

  const admin = async (ctx: Context, token: string | undefined): Promise<Principal> => {
    if (!token) {
      throw unauthorized(`the queue dashboard needs an admin token: sign in at ${QUEUE_DASHBOARD_PATH}/login with one (npx wcr token --roles admin)`, 'invalid_request');
    }
    const p = await s.verifier.verify(token);
    if (!p.roles.includes(ADMIN_ROLE)) throw new AppError('FORBIDDEN', `the queue dashboard is for the ${ADMIN_ROLE} role only`, { roles: p.roles });
    return p;
  };
  const bearer = (ctx: Context): string | undefined => /^Bearer[ ]+([A-Za-z0-9._~+/-]+=*)$/i.exec(ctx.get('authorization'))?.[1];

  return async (ctx, next) => {
    if (ctx.path !== QUEUE_DASHBOARD_PATH && !ctx.path.startsWith(`${QUEUE_DASHBOARD_PATH}/`)) return next();
    const sub = ctx.path.slice(QUEUE_DASHBOARD_PATH.length);
    if (sub === '/login' && ['GET', 'HEAD'].includes(ctx.method)) return loginPage(ctx);
    if (sub === '/login.js' && ['GET', 'HEAD'].includes(ctx.method)) return loginScript(ctx);
    if (sub === '/session' && ctx.method === 'POST') {
      const token = bearer(ctx);
      if (!token && ctx.get('authorization')) throw unauthorized('malformed Authorization header; expected "Bearer <token>"');
      const p = await admin(ctx, token);
      const maxAgeMs = Math.max(0, Math.min(cfg.cookieMaxAgeSec * 1000, p.expires * 1000 - Date.now()));
      ctx.cookies.set(QUEUE_DASHBOARD_COOKIE, token!, { httpOnly: true, sameSite: 'strict', path: QUEUE_DASHBOARD_PATH, maxAge: maxAgeMs, secure: ctx.secure, overwrite: true });
      ctx.status = 204;
      return;
    }
    if (sub === '/session' && ctx.method === 'DELETE') {
      ctx.cookies.set(QUEUE_DASHBOARD_COOKIE, null, { path: QUEUE_DASHBOARD_PATH });
      ctx.status = 204;
      return;
    }
    await admin(ctx, bearer(ctx) ?? ctx.cookies.get(QUEUE_DASHBOARD_COOKIE));
    if (cfg.readOnly && !['GET', 'HEAD'].includes(ctx.method)) {
      throw new AppError('FORBIDDEN', 'the queue dashboard is read-only (set admin.queueDashboard.readOnly to false to allow changes)');
    }
    return board(ctx, next);
  };
}

function loginPage(ctx: Context): void {
  ctx.type = 'text/html';
  ctx.set('Content-Security-Policy', "default-src 'self'; style-src 'self' 'unsafe-inline'");
  ctx.body = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Queue dashboard: sign in</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>Queue dashboard</h1>
<p>For the admin role. Paste an admin access token: with the built-in development issuer,
<code>npx wcr token --roles admin</code> (or <code>npm run token -- --user you --roles admin</code>) prints one;
otherwise take one from your identity provider. It is kept in a cookie for this page only, for at most its lifetime.</p>
<form id="f"><textarea id="t" rows="6" style="width: 100%" placeholder="eyJ..."></textarea>
<p><button type="submit">Open the dashboard</button> <span id="e" style="color: #b00"></span></p></form>
<script src="${QUEUE_DASHBOARD_PATH}/login.js"></script></body></html>`;
}

function loginScript(ctx: Context): void {
  ctx.type = 'application/javascript';
  ctx.body = `document.getElementById('f').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const token = document.getElementById('t').value.trim();
  const res = await fetch('${QUEUE_DASHBOARD_PATH}/session', { method: 'POST', headers: { authorization: 'Bearer ' + token } });
  if (res.status === 204) { location.href = '${QUEUE_DASHBOARD_PATH}'; return; }
  const body = await res.json().catch(() => ({}));
  document.getElementById('e').textContent = res.status + ' ' + (body.message || '');
});`;
}
